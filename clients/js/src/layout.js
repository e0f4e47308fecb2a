// How the 64 bits of an id are split, and taking an id apart. Every value is a BigInt:
// ids use all 64 bits, and a Number is exact only up to 2^53.

import { DecodeError, LayoutError } from "./errors.js";
import { ENCODING_NAMES as NAMES_READ, ENCODINGS, PRESETS } from "./presets.js";

const U64_MAX = (1n << 64n) - 1n;
/** Twitter's epoch, 2010-11-04T01:42:54.657Z: a custom layout's epoch unless given. */
export const TWITTER_EPOCH_MS = PRESETS.twitter.epochMs;
/** The fields below the timestamp, in Twitter's order, most significant first. */
const FIELDS = Object.freeze(["datacenter", "worker", "sequence"]);
/** The digits of 2^64 - 1: no decimal id is longer. */
const DECIMAL_MAX_LEN = 20;

/** The presets' names, in the core's order. */
export const PRESET_NAMES = Object.freeze(Object.keys(PRESETS));

/**
 * @typedef {object} Decoded An id taken apart; every number a BigInt.
 * @property {bigint} timestamp ticks since the layout's epoch
 * @property {bigint} unixMs the start of that tick, in ms since the Unix epoch
 * @property {bigint} datacenter
 * @property {bigint} worker
 * @property {bigint} sequence
 * @property {Date} time unixMs as a Date (an invalid Date past the year 275760)
 * @property {Date} date deprecated: the old name of `time`
 */

/** A validated split of the 64 bits: widths, order of the low fields, tick and epoch. */
export class Layout {
  /**
   * @param {object} spec
   * @param {string} [spec.name] what errors call it (default "custom")
   * @param {{timestamp: number, datacenter: number, worker: number, sequence: number}} spec.bits
   * @param {string[]} [spec.order] datacenter, worker and sequence, most significant first
   * @param {bigint|number|string} [spec.tickMs] ms per tick (default 1)
   * @param {bigint|number|string} [spec.epochMs] ms since the Unix epoch (default Twitter's)
   */
  constructor({ name = "custom", bits, order = FIELDS, tickMs = 1n, epochMs = TWITTER_EPOCH_MS }) {
    const widths = {};
    for (const field of ["timestamp", ...FIELDS]) {
      const width = bits?.[field];
      if (!Number.isInteger(width) || width < 0 || width > 64) {
        throw new LayoutError(`${field} width ${width} is out of range 0..=64`);
      }
      widths[field] = width;
    }
    const total = widths.timestamp + widths.datacenter + widths.worker + widths.sequence;
    if (total > 64) {
      throw new LayoutError(`layout needs ${total} bits but an id has 64`);
    }
    if (widths.timestamp === 0) {
      throw new LayoutError("layout needs at least 1 timestamp bit, got 0");
    }
    if (order.length !== 3 || FIELDS.some((field) => !order.includes(field))) {
      throw new LayoutError(
        `layout order ${JSON.stringify(order)} must name datacenter, worker and sequence once each`,
      );
    }
    const tick = toUint64(tickMs, "tick length", LayoutError);
    if (tick === 0n) {
      throw new LayoutError("tick length must be at least 1 ms, got 0");
    }
    const epoch = toUint64(epochMs, "epoch", LayoutError);
    const span = (1n << BigInt(widths.timestamp)) * tick;
    if (epoch + span - 1n > U64_MAX) {
      throw new LayoutError(
        `epoch ${epoch} ms puts the layout's last tick past the largest millisecond count`,
      );
    }
    this.name = name;
    this.bits = Object.freeze(widths);
    this.order = Object.freeze([...order]);
    this.tickMs = tick;
    this.epochMs = epoch;
    this.maxId = (1n << BigInt(total)) - 1n;
    // Shifts: the last field of the order holds the lowest bits, the timestamp the top ones.
    this.shifts = {};
    let shift = 0n;
    for (const field of [...order].reverse()) {
      this.shifts[field] = shift;
      shift += BigInt(widths[field]);
    }
    this.shifts.timestamp = shift;
    Object.freeze(this.shifts);
    Object.freeze(this);
  }

  /**
   * A preset by name (in any case), or `custom:T/D/W/S`: the timestamp, datacenter, worker
   * and sequence widths, adding up to 63 or 64, in Twitter's field order.
   *
   * @param {string} spec
   * @param {{tickMs?: bigint|number|string, epochMs?: bigint|number|string}} [options]
   *   another tick or epoch than the preset's (a custom layout's: 1 ms and Twitter's)
   * @returns {Layout}
   */
  static named(spec, { tickMs, epochMs } = {}) {
    if (typeof spec !== "string") {
      throw new LayoutError(`layout must be a string such as "twitter", got ${typeof spec}`);
    }
    let base;
    if (spec.slice(0, 7).toLowerCase() === "custom:") {
      base = customBits(spec);
    } else {
      const name = spec.toLowerCase();
      if (!Object.hasOwn(PRESETS, name)) {
        throw new LayoutError(
          `unknown layout ${JSON.stringify(spec)}: expected one of ${PRESET_NAMES.join(", ")} or custom:T/D/W/S`,
        );
      }
      base = { name, ...PRESETS[name] };
    }
    return new Layout({ ...base, tickMs: tickMs ?? base.tickMs, epochMs: epochMs ?? base.epochMs });
  }

  /**
   * Reads id text in `encoding` (decimal, hex, base32, base62 or binary; no guessing).
   *
   * A negative decimal is an id as a signed 64-bit column (SQL `bigint`, a Java `long`)
   * holds it: for a layout of 64 bits it is read as the two's complement; a layout of 63
   * bits has no negative ids, so it is refused.
   *
   * @param {string} text
   * @param {string} [encoding] default "decimal"
   * @returns {bigint}
   */
  readId(text, encoding = "decimal") {
    if (typeof text !== "string") {
      throw new DecodeError(`id text must be a string, got ${typeof text}`);
    }
    if (encodingNamed(encoding) !== "decimal" || !text.startsWith("-") || text === "-") {
      return parseId(text, encoding);
    }
    let magnitude;
    try {
      magnitude = parseId(text.slice(1));
    } catch (err) {
      const invalid = /^(invalid character .*) at position (\d+) (in decimal id)$/su.exec(err.message);
      if (err.message === "decimal id does not fit in 64 bits") {
        magnitude = U64_MAX;
      } else if (invalid) {
        // Positions count the sign.
        throw new DecodeError(`${invalid[1]} at position ${Number(invalid[2]) + 1} ${invalid[3]}`);
      } else {
        throw err;
      }
    }
    if (magnitude > 1n << 63n) {
      throw new DecodeError(
        `id ${JSON.stringify(text)} is below -9223372036854775808, the smallest signed 64-bit number`,
      );
    }
    if (magnitude !== 0n && this.maxId < U64_MAX) {
      const name = this.name.startsWith("custom") ? "custom" : this.name;
      throw new DecodeError(
        `id ${JSON.stringify(text)} is negative, but layout ${name} uses 63 bits: none of its ids is negative, even in a signed 64-bit column`,
      );
    }
    return (-magnitude) & U64_MAX;
  }

  /**
   * Takes an id apart.
   *
   * @param {string|bigint} id text in `encoding` (as `readId` reads it) or a BigInt, never
   *   a Number
   * @param {string} [encoding] default "decimal"
   * @returns {Decoded}
   */
  decode(id, encoding = "decimal") {
    const value = typeof id === "string" ? this.readId(id, encoding) : parseId(id);
    if (value > this.maxId) {
      throw new DecodeError(
        `id ${value} is out of range for this layout: its largest id is ${this.maxId}`,
      );
    }
    const field = (name) => (value >> this.shifts[name]) & ((1n << BigInt(this.bits[name])) - 1n);
    const timestamp = field("timestamp");
    const unixMs = this.epochMs + timestamp * this.tickMs;
    const decoded = {
      timestamp,
      unixMs,
      datacenter: field("datacenter"),
      worker: field("worker"),
      sequence: field("sequence"),
      // Date holds ms up to 8.64e15; past that, an invalid Date.
      time: new Date(unixMs <= 8_640_000_000_000_000n ? Number(unixMs) : NaN),
    };
    // The old name of `time`, kept for existing code; not enumerable, so that spreading and
    // comparing a decoded id sees each field once.
    Object.defineProperty(decoded, "date", { get: () => decoded.time, enumerable: false });
    return Object.freeze(decoded);
  }
}

/**
 * Takes an id apart.
 *
 * @param {string|bigint} id a decimal string or a BigInt, never a Number
 * @param {string} [layout] a preset or `custom:T/D/W/S` (default "twitter")
 * @param {bigint|number|string} [tickMs] another tick than the layout's
 * @param {bigint|number|string} [epochMs] another epoch than the layout's
 * @returns {Decoded}
 */
export function decode(id, layout = "twitter", tickMs = undefined, epochMs = undefined, encoding = "decimal") {
  return Layout.named(layout, { tickMs, epochMs }).decode(id, encoding);
}

/** The encodings, in the core's order. */
export const ENCODING_NAMES = Object.freeze(Object.keys(ENCODINGS));

/** The encoding a name stands for, in any case, as the core reads names. */
function encodingNamed(name) {
  const lower = typeof name === "string" ? name.toLowerCase() : "";
  const found = Object.hasOwn(NAMES_READ, lower) ? NAMES_READ[lower] : undefined;
  if (found === undefined) {
    throw new DecodeError(`unknown encoding ${JSON.stringify(String(name))}: expected one of ${ENCODING_NAMES.join(", ")}`);
  }
  return found;
}

/**
 * Reads `text` in `encoding` as the core does, with its messages: the first character
 * outside the alphabet, else too many digits, else a value past 64 bits.
 */
function readDigits(text, encoding) {
  const { alphabet, foldCase, prefixes, maxLen, aliases } = ENCODINGS[encoding];
  const prefix = prefixes.find((p) => text.startsWith(p)) ?? "";
  // Positions count characters, not UTF-16 units, as the core counts them.
  const chars = Array.from(text.slice(prefix.length));
  if (chars.length === 0) {
    throw new DecodeError("empty input: expected an id");
  }
  const radix = BigInt(alphabet.length);
  let value = 0n;
  chars.forEach((ch, position) => {
    let digit = -1;
    // ASCII only: "ı".toUpperCase() is "I", which base32 reads as 1.
    if (ch.length === 1 && ch.charCodeAt(0) < 128) {
      digit = foldCase ? alphabet.toUpperCase().indexOf(ch.toUpperCase()) : alphabet.indexOf(ch);
      digit = aliases[ch.toUpperCase()] ?? digit;
    }
    if (digit < 0) {
      throw new DecodeError(
        `invalid character ${quoteChar(ch)} at position ${prefix.length + position} in ${encoding} id`,
      );
    }
    value = value * radix + BigInt(digit);
  });
  if (chars.length > maxLen) {
    throw new DecodeError(`${encoding} id has ${chars.length} characters, more than the ${maxLen} a 64-bit id takes`);
  }
  if (value > U64_MAX) {
    throw new DecodeError(`${encoding} id does not fit in 64 bits`);
  }
  return value;
}

/**
 * Reads an id: a string in `encoding` (decimal by default: at most 20 digits; hex, base32,
 * base62 or binary as the core writes and reads them), or a BigInt, within 0..=2^64-1.
 *
 * @param {string|bigint} id
 * @param {string} [encoding] default "decimal"
 * @returns {bigint}
 */
export function parseId(id, encoding = "decimal") {
  if (typeof id === "bigint") {
    if (id < 0n || id > U64_MAX) {
      throw new DecodeError(`id ${id} is out of range 0..=${U64_MAX}`);
    }
    return id;
  }
  if (typeof id !== "string") {
    const hint = typeof id === "number" ? ": numbers lose precision above 2^53" : "";
    throw new DecodeError(`id must be a decimal string or a BigInt, got the ${typeof id} ${String(id)}${hint}`);
  }
  if (encodingNamed(encoding) !== "decimal") {
    return readDigits(id, encodingNamed(encoding));
  }
  if (id === "") {
    throw new DecodeError("empty input: expected an id");
  }
  // Positions count characters, not UTF-16 units, as the core counts them.
  const chars = Array.from(id);
  const bad = chars.findIndex((ch) => ch < "0" || ch > "9");
  if (bad >= 0) {
    throw new DecodeError(`invalid character ${quoteChar(chars[bad])} at position ${bad} in decimal id`);
  }
  if (chars.length > DECIMAL_MAX_LEN) {
    throw new DecodeError(
      `decimal id has ${chars.length} characters, more than the ${DECIMAL_MAX_LEN} a 64-bit id takes`,
    );
  }
  const value = BigInt(id);
  if (value > U64_MAX) {
    throw new DecodeError("decimal id does not fit in 64 bits");
  }
  return value;
}

/** The widths of `custom:T/D/W/S`, checked as the core checks them. */
function customBits(spec) {
  const parts = spec.slice(7).split("/");
  if (parts.length !== 4) {
    throw new LayoutError(
      `custom layout ${JSON.stringify(spec)} must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12`,
    );
  }
  const bits = {};
  ["timestamp", ...FIELDS].forEach((field, i) => {
    // Plain digits only, as the core takes them: no sign, no space.
    const text = parts[i];
    if (!/^[0-9]{1,3}$/.test(text) || Number(text) > 64) {
      throw new LayoutError(
        `custom layout ${field} width ${JSON.stringify(parts[i])} is not a number of bits 0..=64`,
      );
    }
    bits[field] = Number(text);
  });
  const total = bits.timestamp + bits.datacenter + bits.worker + bits.sequence;
  if (total !== 63 && total !== 64) {
    throw new LayoutError(
      `custom layout widths add up to ${total} bits: they must add up to 63 (bit 63 stays 0) or 64`,
    );
  }
  if (bits.timestamp === 0) {
    throw new LayoutError("layout needs at least 1 timestamp bit, got 0");
  }
  if (bits.sequence === 0) {
    throw new LayoutError("custom layout needs at least 1 sequence bit, got 0");
  }
  return { name: spec, bits, order: FIELDS, tickMs: 1n, epochMs: TWITTER_EPOCH_MS };
}

/**
 * A whole number 0..=2^64-1 from a BigInt, a safe-integer Number or a decimal string.
 *
 * @param {bigint|number|string} value
 * @param {string} what what the message calls it
 * @param {typeof Error} Err the error to throw
 * @returns {bigint}
 */
function toUint64(value, what, Err) {
  let n;
  if (typeof value === "bigint") {
    n = value;
  } else if (typeof value === "number" && Number.isSafeInteger(value)) {
    n = BigInt(value);
  } else if (typeof value === "string" && /^[0-9]{1,20}$/.test(value)) {
    n = BigInt(value);
  } else {
    throw new Err(`${what} ${JSON.stringify(String(value))} is not a whole number 0..=${U64_MAX}`);
  }
  if (n < 0n || n > U64_MAX) {
    throw new Err(`${what} ${n} is out of range 0..=${U64_MAX}`);
  }
  return n;
}

/** A character as the core's messages show one: in single quotes, control characters escaped. */
function quoteChar(ch) {
  if (ch === "'") {
    return "'\\''";
  }
  return `'${ch === '"' ? ch : JSON.stringify(ch).slice(1, -1)}'`;
}
