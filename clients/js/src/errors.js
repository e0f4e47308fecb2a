// The errors this package throws: one class per layer, each message naming the value at
// fault and the limit it broke.

/** Every error this package throws. */
export class SnowmintError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A layout that is no preset and no valid `custom:T/D/W/S`, or a bad tick or epoch. */
export class LayoutError extends SnowmintError {}

/** Text that is no 64-bit decimal id, or an id past what its layout holds. */
export class DecodeError extends SnowmintError {}

/** @deprecated the old name of {@link DecodeError}, kept so that existing code runs. */
export const IdError = DecodeError;

/** Settings a client cannot work with: a batch size past the limit, a bad base URL. */
export class ConfigError extends SnowmintError {}

/** The request got no answer: the server is unreachable or timed out. */
export class ConnectionError extends SnowmintError {}

/** @deprecated the old name of {@link ConnectionError}, kept so that existing code runs. */
export const RequestError = ConnectionError;

/** The server answered with an error status, or with a body that holds no ids. */
export class ServerError extends SnowmintError {
  /**
   * @param {string} message
   * @param {number} status the HTTP status
   * @param {string} detail the server's own error text
   */
  constructor(message, status, detail) {
    super(message);
    this.status = status;
    this.detail = detail;
  }
}
