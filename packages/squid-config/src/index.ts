export { CONTAINER_PASSWORD_FILE, SERVICE_PASSWORD_FILE, type SquidAuth } from './auth.js';
export { squidSourceList, withPrefix } from './cidr.js';
export {
  CONTAINER_PATHS,
  renderSquidConfig,
  SERVICE_PATHS,
  type SquidPaths,
  type SquidSettings,
} from './render.js';
