// snowmint: ids from a snowmint server, and decoding of any id for the presets and custom
// layouts, with exact 64-bit arithmetic.

export { Client } from "./client.js";
export { decode, ENCODING_NAMES, Layout, parseId, PRESET_NAMES, TWITTER_EPOCH_MS } from "./layout.js";
export {
  ConfigError,
  ConnectionError,
  DecodeError,
  LayoutError,
  ServerError,
  SnowmintError,
  // Deprecated: the old names of DecodeError and ConnectionError.
  IdError,
  RequestError,
} from "./errors.js";
