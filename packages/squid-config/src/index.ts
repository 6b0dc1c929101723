export { squidSourceList, withPrefix } from './cidr.js';
export {
  CONTAINER_PATHS,
  renderSquidConfig,
  SERVICE_PATHS,
  type SquidPaths,
  type SquidSettings,
} from './render.js';
