export type { Content } from './bytes.js';
export { NoCloudError, type NoCloudErrorCode } from './errors.js';
export { GUEST_AGENT_SCRIPT } from './guest-agent.js';
export {
  type BuildIsoOptions,
  buildISO,
  type IsoFile,
  MAX_ISO_BYTES,
  MAX_ISO_LABEL_LENGTH,
  MAX_ISO_NAME_LENGTH,
  SECTOR_BYTES,
} from './iso9660.js';
export {
  buildMultipart,
  detectContentType,
  isMimeMessage,
  MULTIPART_BOUNDARY,
  type MultipartPart,
} from './multipart.js';
export {
  buildMetaData,
  buildSeedISO,
  buildVendorData,
  MAX_INSTANCE_ID_LENGTH,
  MAX_SEED_FILE_BYTES,
  SEED_LABEL,
  SEED_MIN_BYTES,
  type SeedFile,
  type SeedOptions,
  seedFiles,
  type VendorDataOptions,
} from './seed.js';
