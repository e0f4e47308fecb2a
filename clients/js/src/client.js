// Ids from `snowmint serve` over HTTP, through a local buffer that is refilled in the
// background before it runs dry. Ids stay decimal strings: a Number would round them.

import { readFileSync } from "node:fs";
import { Agent, request as httpsRequest } from "node:https";

import { ConfigError, ConnectionError, ServerError } from "./errors.js";

/** The server's default largest count of /v1/ids (its --max-batch). */
const SERVER_MAX_BATCH = 100_000;
/** How much of a non-JSON error body a message quotes. */
const QUOTE_CHARS = 200;

/**
 * A client of one snowmint server.
 *
 * ```js
 * const client = new Client("http://127.0.0.1:8080");
 * const id = await client.nextId(); // "2125143637301030912"
 * ```
 */
export class Client {
  #base;
  #headers;
  #timeoutMs;
  #batchSize;
  #refillBelow;
  #maxBatch;
  #fetch;
  /** Ids not handed out yet, oldest first, from #head on. */
  #buffer = [];
  #head = 0;
  /**
   * The request in flight, if any, as a promise that never rejects: it resolves to the
   * error of a refill that failed, or to null. One request at a time keeps ids in order.
   */
  #inflight = null;

  /**
   * @param {string} baseUrl the server, such as `http://127.0.0.1:8080`
   * @param {object} [options]
   * @param {string} [options.token] bearer token, for a server started with --auth-token
   * @param {number} [options.timeoutMs] longest wait for one answer (default 5000)
   * @param {number} [options.batchSize] ids per refill of the buffer (default 100); with 1,
   *   ids come one at a time from /v1/id
   * @param {number} [options.refillBelow] a refill starts when fewer ids are left
   *   (default a quarter of batchSize); 0 refills only an empty buffer
   * @param {number} [options.maxBatch] the server's --max-batch (default 100000): larger
   *   counts are fetched in parts
   * @param {typeof fetch} [options.fetch] the fetch function to use (default the global one)
   * @param {string} [options.caFile] for an https:// server: the PEM file of the CA that
   *   signs its certificate (default the system's CAs)
   * @param {string} [options.certFile] with keyFile: the PEM client certificate for a
   *   server started with --tls-client-ca
   * @param {string} [options.keyFile] the client certificate's PEM private key
   */
  constructor(baseUrl, options = {}) {
    const {
      token,
      timeoutMs = 5000,
      batchSize = 100,
      refillBelow = Math.floor(batchSize / 4),
      maxBatch = SERVER_MAX_BATCH,
      fetch,
      caFile,
      certFile,
      keyFile,
    } = options;
    let url;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new ConfigError(`base url ${JSON.stringify(String(baseUrl))} is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new ConfigError(`base url ${JSON.stringify(baseUrl)} must start with http:// or https://`);
    }
    // Paths resolve below the base, so a server behind a path prefix keeps it.
    if (!url.pathname.endsWith("/")) {
      url.pathname += "/";
    }
    this.#base = url;
    this.#headers = { accept: "application/json" };
    if (token !== undefined) {
      this.#headers.authorization = `Bearer ${token}`;
    }
    this.#maxBatch = whole(maxBatch, "max batch", 1, Number.MAX_SAFE_INTEGER);
    this.#batchSize = whole(batchSize, "batch size", 1, this.#maxBatch, "the max batch");
    this.#refillBelow = whole(refillBelow, "refill threshold", 0, this.#batchSize, "the batch size");
    this.#timeoutMs = whole(timeoutMs, "timeout", 1, 2 ** 31 - 1);
    const tls = tlsOptions(caFile, certFile, keyFile);
    if (tls && fetch) {
      throw new ConfigError("give caFile, certFile and keyFile, or a fetch function, not both");
    }
    // The global fetch takes no CA: TLS settings go through node's own https module.
    this.#fetch = fetch ?? (tls && url.protocol === "https:" ? httpsFetch(tls) : globalThis.fetch);
  }

  /** How many ids the buffer holds now. */
  get buffered() {
    return this.#buffer.length - this.#head;
  }

  /**
   * One id, from the buffer; a refill starts in the background when it runs low.
   *
   * @returns {Promise<string>} the id, in decimal
   */
  async nextId() {
    for (;;) {
      if (this.buffered > 0) {
        const [id] = this.#take(1);
        this.#refillIfLow();
        return id;
      }
      const error = await (this.#inflight ?? this.#refill());
      if (error && this.buffered === 0) {
        throw error;
      }
    }
  }

  /**
   * `count` ids, in increasing order: what the buffer holds first, the rest straight from
   * the server.
   *
   * @param {number} count how many, at least 1
   * @returns {Promise<string[]>}
   */
  async nextIds(count) {
    whole(count, "count", 1, Number.MAX_SAFE_INTEGER, undefined, RangeError);
    // A refill in flight lands first, so that the ids come out in the order they were made.
    while (this.#inflight) {
      await this.#inflight;
    }
    let ids = this.#take(Math.min(count, this.buffered));
    if (ids.length < count) {
      const rest = this.#fetchMany(count - ids.length);
      this.#track(rest, false);
      try {
        ids = ids.concat(await rest);
      } catch (error) {
        this.#putBack(ids);
        throw error;
      }
    }
    this.#refillIfLow();
    return ids;
  }

  #take(n) {
    const ids = this.#buffer.slice(this.#head, this.#head + n);
    this.#head += n;
    if (this.#head > this.#buffer.length / 2) {
      this.#buffer = this.#buffer.slice(this.#head);
      this.#head = 0;
    }
    return ids;
  }

  #putBack(ids) {
    this.#buffer = ids.concat(this.#buffer.slice(this.#head));
    this.#head = 0;
  }

  #refillIfLow() {
    if (this.buffered < this.#refillBelow && !this.#inflight) {
      this.#refill();
    }
  }

  /** Starts fetching one batch into the buffer; resolves to its error or null. */
  #refill() {
    const task = this.#fetchIds(this.#batchSize).then((ids) => {
      this.#buffer = this.#buffer.concat(ids);
    });
    return this.#track(task, true);
  }

  /** Marks a request as the one in flight until it settles. */
  #track(task, reportError) {
    const settled = task
      .then(
        () => null,
        (error) => (reportError ? error : null),
      )
      .then((error) => {
        if (this.#inflight === settled) {
          this.#inflight = null;
        }
        return error;
      });
    this.#inflight = settled;
    return settled;
  }

  async #fetchMany(count) {
    let ids = [];
    while (ids.length < count) {
      ids = ids.concat(await this.#fetchIds(Math.min(count - ids.length, this.#maxBatch)));
    }
    return ids;
  }

  async #fetchIds(count) {
    if (count === 1) {
      const body = await this.#get("v1/id");
      if (!isDecimal(body?.id)) {
        throw new ServerError(`server answered ${this.#url("v1/id")} without an "id" string`, 200, "");
      }
      return [body.id];
    }
    const path = `v1/ids?count=${count}`;
    const body = await this.#get(path);
    const ids = body?.ids;
    if (!Array.isArray(ids) || ids.length !== count || !ids.every(isDecimal)) {
      throw new ServerError(
        `server answered ${this.#url(path)} without an "ids" list of ${count} decimal strings`,
        200,
        "",
      );
    }
    return ids;
  }

  #url(path) {
    return new URL(path, this.#base).href;
  }

  async #get(path) {
    const url = this.#url(path);
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let response;
    let text;
    try {
      response = await this.#fetch(url, { headers: this.#headers, signal });
      text = await response.text();
    } catch (error) {
      if (signal.aborted) {
        throw new ConnectionError(`no answer from ${url} within ${this.#timeoutMs} ms`, { cause: error });
      }
      const cause = error?.cause ?? error;
      const reason = cause?.message ?? String(error);
      if (isCertificateError(cause)) {
        throw new ConnectionError(`cannot reach ${url}: the server's certificate is not trusted: ${reason}`, {
          cause: error,
        });
      }
      throw new ConnectionError(`cannot reach ${url}: ${reason}`, { cause: error });
    }
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!response.ok) {
      const detail =
        typeof body?.error === "string" ? body.error : text.trim().slice(0, QUOTE_CHARS) || "(no body)";
      const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
      throw new ServerError(`server answered ${status} to ${url}: ${detail}`, response.status, detail);
    }
    if (body === undefined) {
      throw new ServerError(`server answered ${url} with no JSON: ${text.slice(0, QUOTE_CHARS)}`, response.status, "");
    }
    return body;
  }
}

/** The contents of the TLS files, read now so that a bad path fails at once; or null. */
function tlsOptions(caFile, certFile, keyFile) {
  if (caFile === undefined && certFile === undefined && keyFile === undefined) {
    return null;
  }
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError("certFile and keyFile go together: give both or neither");
  }
  const read = (what, path) => {
    if (path === undefined) {
      return undefined;
    }
    try {
      return readFileSync(path);
    } catch (error) {
      throw new ConfigError(`${what} ${JSON.stringify(String(path))}: cannot read it: ${error.message}`, {
        cause: error,
      });
    }
  };
  return { ca: read("caFile", caFile), cert: read("certFile", certFile), key: read("keyFile", keyFile) };
}

/**
 * A fetch over node's https module, with TLS settings the global fetch cannot take: as much
 * of fetch as the client uses (headers, signal; ok, status, statusText, text()).
 */
function httpsFetch(tls) {
  const agent = new Agent({ keepAlive: true, ...tls });
  return (url, { headers, signal }) =>
    new Promise((resolve, reject) => {
      const req = httpsRequest(url, { agent, headers, signal }, (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({
            ok: res.statusCode >= 200 && res.statusCode < 300,
            status: res.statusCode,
            statusText: res.statusMessage ?? "",
            text: async () => text,
          });
        });
      });
      req.on("error", reject);
      req.end();
    });
}

/** Whether a request failed because the server's certificate was not accepted. */
function isCertificateError(error) {
  const code = typeof error?.code === "string" ? error.code : "";
  return (
    code.startsWith("CERT_") ||
    code.includes("CERT_CHAIN") ||
    code.includes("SELF_SIGNED") ||
    code.startsWith("UNABLE_TO_") ||
    code === "ERR_TLS_CERT_ALTNAME_INVALID"
  );
}

function isDecimal(value) {
  return typeof value === "string" && /^[0-9]{1,20}$/.test(value);
}

/** A whole Number within min..=max, or an error (a ConfigError) naming it and the range. */
function whole(value, what, min, max, maxName = undefined, Err = ConfigError) {
  if (!Number.isInteger(value) || value < min || value > max) {
    const limit = maxName ? `${max} (${maxName})` : `${max}`;
    throw new Err(`${what} ${value} is out of range ${min}..=${limit}`);
  }
  return value;
}
