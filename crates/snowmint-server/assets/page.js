// snowmint's page: generates ids from this server and takes any id apart in the browser.
// An id is a BigInt from the moment it is read: a JavaScript Number holds only 53 bits.
'use strict';

(() => {
  // What the server hands over: every encoding and preset as the core defines them, and
  // this server's limits. Every 64-bit number is a string, read here as a BigInt.
  const DATA = JSON.parse(document.getElementById('snowmint-data').textContent);

  // ---------------------------------------------------------------------------------------
  // Encodings: the core's alphabets and digit tables; the rules and messages of
  // `Encoding::decode` and `Encoding::detect` (tests/browser.rs compares them).

  const U64_MAX = (1n << 64n) - 1n;

  /** The largest value `bits` bits hold (bits may be 0..=64). */
  const mask = (bits) => (1n << BigInt(bits)) - 1n;

  /** By name: each encoding, with the table of every character it reads as a digit. */
  const ENCODINGS = Object.fromEntries(DATA.encodings.map((e) => [e.name, {
    name: e.name,
    title: e.title,
    alphabet: [...e.alphabet],
    radix: BigInt([...e.alphabet].length),
    maxLen: e.max_len,
    padded: e.padded,
    prefixes: e.prefixes,
    writtenPrefix: e.written_prefix,
    table: new Map(Object.entries(e.digits)),
  }]));

  /** A message for the person, shown inline; never a crash. */
  class InputError extends Error {}

  /**
   * A character as Rust's `{:?}` writes it, so messages match the server's word for word:
   * a few backslash escapes, and `\u{…}` for what is not printable (control, format,
   * private-use, unassigned, separators but the space) or extends a grapheme.
   */
  const UNPRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}\p{Grapheme_Extend}]$/u;
  function quoteChar(ch) {
    const escapes = { "'": "\\'", '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\0': '\\0' };
    if (escapes[ch]) return `'${escapes[ch]}'`;
    if (ch !== ' ' && UNPRINTABLE.test(ch)) return `'\\u{${ch.codePointAt(0).toString(16)}}'`;
    return `'${ch}'`;
  }

  /** Reads `text` in one encoding: like `Encoding::decode`, errors in the same precedence. */
  function decodeAs(encodingName, text) {
    const encoding = ENCODINGS[encodingName];
    const prefix = encoding.prefixes.find((p) => text.startsWith(p)) || '';
    const digits = text.slice(prefix.length);
    const offset = [...prefix].length;
    if (digits === '') throw new InputError('empty input: expected an id');
    let value = 0n;
    let len = 0;
    let overflow = false;
    for (const ch of digits) {
      const digit = encoding.table.get(ch);
      if (digit === undefined) {
        throw new InputError(
          `invalid character ${quoteChar(ch)} at position ${offset + len} in ${encodingName} id`);
      }
      // Keep reading after an overflow: a bad character later on outranks it.
      if (!overflow) {
        value = value * encoding.radix + BigInt(digit);
        overflow = value > U64_MAX;
      }
      len += 1;
    }
    if (len > encoding.maxLen) {
      throw new InputError(
        `${encodingName} id has ${len} characters, more than the ${encoding.maxLen} a 64-bit id takes`);
    }
    if (overflow) throw new InputError(`${encodingName} id does not fit in 64 bits`);
    return value;
  }

  /** The encodings `Encoding::detect` reads by their padded width alone, without a prefix. */
  const GUESSED_WIDTHS = ['base32', 'base62', 'hex'];

  /**
   * `Layout::read_id(text, None)`: `text` in the encoding its form suggests, and a negative
   * decimal as a signed 64-bit column holds an id of a layout of 64 bits. A guess that fails
   * names the encodings that read the text, unless a prefix named the encoding.
   */
  function readId(layout, text) {
    const encodingName = guessEncoding(text);
    if (encodingName === 'decimal' && text.startsWith('-') && text !== '-') {
      const raw = readNegative(layout, text);
      return { raw, encodingName, signed: raw !== 0n };
    }
    try {
      return { raw: decodeAs(encodingName, text), encodingName, signed: false };
    } catch (err) {
      const prefixed = ENCODINGS[encodingName].prefixes.some((p) => text.startsWith(p));
      const readers = Object.keys(ENCODINGS).filter((name) => name !== encodingName && reads(name, text));
      if (!(err instanceof InputError) || prefixed || readers.length === 0) throw err;
      const list = readers.length === 1
        ? readers[0] : `${readers.slice(0, -1).join(', ')} or ${readers[readers.length - 1]}`;
      const note = readers.includes('base62')
        ? ' (base62 written without padding, as TSID libraries other than tsid-creator write it, cannot be told from base32 or decimal)'
        : '';
      throw new InputError(
        `${err.message}, the encoding guessed from its form, but it reads as ${list}: name its encoding${note}`);
    }
  }

  /** Whether `text` decodes in the encoding. */
  function reads(encodingName, text) {
    try {
      decodeAs(encodingName, text);
      return true;
    } catch {
      return false;
    }
  }

  /** The two's complement of a negative decimal, for a layout of 64 bits. */
  function readNegative(layout, text) {
    const quoted = JSON.stringify(text);
    const below = `id ${quoted} is below -9223372036854775808, the smallest signed 64-bit number`;
    let magnitude;
    try {
      magnitude = decodeAs('decimal', text.slice(1));
    } catch (err) {
      if (err.message === 'decimal id does not fit in 64 bits') throw new InputError(below);
      // Positions count the sign.
      throw new InputError(err.message.replace(/ at position (\d+) /, (_, n) => ` at position ${Number(n) + 1} `));
    }
    if (magnitude > 1n << 63n) throw new InputError(below);
    if (magnitude !== 0n && layout.total < 64) {
      const name = layout.label || layout.name;
      throw new InputError(
        `id ${quoted} is negative, but layout ${name} uses 63 bits: none of its ids is negative, even in a signed 64-bit column`);
    }
    return (-magnitude) & U64_MAX;
  }

  /**
   * The encoding `Encoding::detect` assumes for `text`: all ASCII digits is decimal; then
   * the prefix an encoding writes followed by its digits only (hex's `0x`, binary's `0b`);
   * then the digits of base32, base62 or hex, at their padded width; then a prefix; else
   * decimal.
   */
  function guessEncoding(text) {
    if (/^[0-9]*$/.test(text)) return 'decimal';
    const all = Object.values(ENCODINGS);
    const written = all.find((e) => e.writtenPrefix && e.prefixes.some((p) => {
      const digits = text.startsWith(p) ? [...text.slice(p.length)] : [];
      return digits.length > 0 && digits.every((ch) => e.table.has(ch));
    }));
    if (written) return written.name;
    const len = [...text].length;
    const padded = GUESSED_WIDTHS.map((n) => ENCODINGS[n]).find((e) => e.maxLen === len);
    if (padded) return padded.name;
    const prefixed = all.find((e) => e.prefixes.some((p) => text.startsWith(p)));
    if (prefixed) return prefixed.name;
    return 'decimal';
  }

  /** Writes `value` as `Encoding::encode` does: zero-padded where the encoding pads. */
  function encode(encodingName, value) {
    const { alphabet, radix, padded, maxLen, writtenPrefix } = ENCODINGS[encodingName];
    let out = '';
    let rest = value;
    do {
      out = alphabet[Number(rest % radix)] + out;
      rest /= radix;
    } while (rest > 0n);
    return writtenPrefix + (padded ? out.padStart(maxLen, alphabet[0]) : out);
  }

  /** "Decimal, 0x… or 16-character Hex, …": what Parse reads, for its hint (as nodes). */
  function encodingsText() {
    const parts = Object.values(ENCODINGS).map((e) => {
      if (!e.padded) return [e.title];
      const width = `${e.maxLen}-character ${e.title}`;
      if (!e.prefixes.length) return [width];
      if (!GUESSED_WIDTHS.includes(e.name)) return [h('code', {}, `${e.prefixes[0]}…`), ` ${e.title}`];
      return [h('code', {}, `${e.prefixes[0]}…`), ` or ${width}`];
    });
    const last = parts.pop();
    return [...parts.flatMap((part, i) => (i ? [', ', ...part] : part)), ' or ', ...last, '.'];
  }

  // ---------------------------------------------------------------------------------------
  // Layouts: the core's presets, as data, and decoding.

  /** A layout's numbers as the server wrote them, with the 64-bit ones as BigInt. */
  const spec = (l) => ({
    title: l.title, bits: l.bits, order: l.order, names: l.names,
    tickMs: BigInt(l.tick_ms), epochMs: BigInt(l.epoch_ms),
  });

  const PRESETS = Object.fromEntries(DATA.presets.map((l) => [l.name, spec(l)]));
  /** What `Layout::new` makes: the order and names of a custom layout, and its first numbers. */
  const CUSTOM = spec(DATA.custom);

  /**
   * A layout ready to decode: the low fields' shifts follow their order, last field lowest,
   * and the timestamp sits above them all (as `Layout::preset` computes them).
   */
  function makeLayout(name, layoutSpec) {
    const shifts = {};
    let shift = 0;
    for (const key of [...layoutSpec.order].reverse()) {
      shifts[key] = shift;
      shift += layoutSpec.bits[key];
    }
    shifts.timestamp = shift;
    return { name, ...layoutSpec, shifts, total: shift + layoutSpec.bits.timestamp };
  }

  /** Checks a layout built from the custom inputs, with `Layout::new_u64`'s rules. */
  function checkLayout(layout) {
    if (layout.total > 64) throw new InputError(`layout needs ${layout.total} bits but an id has 64`);
    if (layout.bits.timestamp === 0) throw new InputError('layout needs at least 1 timestamp bit, got 0');
    if (layout.tickMs === 0n) throw new InputError('tick length must be at least 1 ms, got 0');
    const end = layout.epochMs + (1n << BigInt(layout.bits.timestamp)) * layout.tickMs;
    if (end > U64_MAX) {
      throw new InputError(
        `epoch ${layout.epochMs} ms puts the layout's last tick past the largest millisecond count`);
    }
    return layout;
  }

  /** Takes `raw` apart: `Layout::decode`, refusing bits the layout never sets. */
  function decodeWith(layout, raw) {
    const max = mask(layout.total);
    if (raw > max) {
      throw new InputError(`id ${raw} is out of range for this layout: its largest id is ${max}`);
    }
    const field = (key) => (layout.bits[key] === 0
      ? 0n
      : (raw >> BigInt(layout.shifts[key])) & mask(layout.bits[key]));
    const timestamp = field('timestamp');
    const unixMs = layout.epochMs + timestamp * layout.tickMs;
    return {
      id: raw,
      timestamp,
      unixMs: unixMs > U64_MAX ? U64_MAX : unixMs,
      datacenter: field('datacenter'),
      worker: field('worker'),
      sequence: field('sequence'),
    };
  }

  /**
   * The layout's segments from bit 63 down: unused high bits, the timestamp, then the low
   * fields in order; fields of no bits are left out, as the CLI's diagram does.
   */
  function segments(layout) {
    const out = [];
    const spare = 64 - layout.total;
    if (spare > 0) out.push({ key: 'unused', name: 'unused', bits: spare });
    out.push({ key: 'timestamp', name: 'timestamp', bits: layout.bits.timestamp });
    for (const key of layout.order) {
      if (layout.bits[key] > 0) out.push({ key, name: layout.names[key], bits: layout.bits[key] });
    }
    let hi = 63;
    for (const seg of out) {
      seg.hi = hi;
      seg.lo = hi - seg.bits + 1;
      hi = seg.lo - 1;
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------
  // Time, for people.

  /** The last instant the server writes as a date (`UnixMs::LAST_DATE`). */
  const LAST_DATE_MS = BigInt(DATA.last_date_ms);

  function utcText(ms) {
    if (ms > LAST_DATE_MS) return `${ms} ms after the Unix epoch`;
    return new Date(Number(ms)).toISOString().replace('T', ' ').replace('Z', ' UTC');
  }

  // en-US for ASCII digits in a fixed order; the time zone is still the viewer's.
  const LOCAL_FORMAT = new Intl.DateTimeFormat('en-US', {
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    second: '2-digit', fractionalSecondDigits: 3, hourCycle: 'h23', timeZoneName: 'short',
  });
  const LOCAL_ZONE = LOCAL_FORMAT.resolvedOptions().timeZone;

  function localText(ms) {
    if (ms > LAST_DATE_MS) return '—';
    const parts = {};
    for (const p of LOCAL_FORMAT.formatToParts(new Date(Number(ms)))) parts[p.type] = p.value;
    const zone = parts.timeZoneName === LOCAL_ZONE ? LOCAL_ZONE : `${parts.timeZoneName}, ${LOCAL_ZONE}`;
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`
      + `.${parts.fractionalSecond} (${zone})`;
  }

  const UNITS = [
    ['year', 365.2425 * 86400e3], ['month', 30.436875 * 86400e3], ['day', 86400e3],
    ['hour', 3600e3], ['minute', 60e3], ['second', 1e3],
  ];

  /** "3 minutes 12 seconds ago", "in 54 years 5 months": the two largest units. */
  function agoText(ms) {
    if (ms > LAST_DATE_MS) return 'far in the future';
    const diff = Date.now() - Number(ms);
    let left = Math.abs(diff);
    if (left < 1000) return diff >= 0 ? 'less than a second ago' : 'in less than a second';
    const words = [];
    for (const [unit, size] of UNITS) {
      const n = Math.floor(left / size);
      if (n > 0 || words.length) {
        if (n > 0) words.push(`${n} ${unit}${n === 1 ? '' : 's'}`);
        left -= n * size;
        if (words.length === 2 || (words.length && n === 0)) break;
      }
    }
    const text = words.join(' ');
    return diff >= 0 ? `${text} ago` : `in ${text}`;
  }

  /** Keeps every "how long ago" on the page current. */
  function refreshAgo() {
    for (const el of document.querySelectorAll('[data-ago-ms]')) {
      el.textContent = agoText(BigInt(el.dataset.agoMs));
    }
  }

  const number = (n) => BigInt(n).toLocaleString('en-US');

  // ---------------------------------------------------------------------------------------
  // The DOM, built with text nodes only: nothing a person types becomes markup.

  const $ = (id) => document.getElementById(id);

  function h(tag, attrs = {}, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'class') el.className = value;
      else if (name === 'dataset') Object.assign(el.dataset, value);
      else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
      else el.setAttribute(name, value === true ? '' : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  /** Line icons for the small buttons: a label shows beside them on wider screens. */
  const ICONS = {
    copy: 'M8 8h11v11H8zM5 16V5h11',
    parse: 'M10.5 4a6.5 6.5 0 1 0 0 13 6.5 6.5 0 0 0 0-13zM20 20l-4.8-4.8',
  };

  function icon(name) {
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    const path = document.createElementNS(ns, 'path');
    path.setAttribute('d', ICONS[name]);
    svg.append(path);
    return svg;
  }

  function showError(el, message) {
    el.textContent = message || '';
    el.hidden = !message;
  }

  async function copyText(text, button) {
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        ok = true;
      }
    } catch (_) {
      ok = false;
    }
    if (!ok) {
      // Plain http on another host is no secure context: fall back to a selection.
      const area = h('textarea', { style: 'position:fixed;top:-1000px;opacity:0', readonly: true });
      area.value = text;
      document.body.append(area);
      area.select();
      try {
        ok = document.execCommand('copy');
      } catch (_) {
        ok = false;
      }
      area.remove();
    }
    const label = button.querySelector('.label') || button;
    const before = label.textContent;
    label.textContent = ok ? 'Copied' : 'Copy failed';
    button.classList.add(ok ? 'done' : 'failed');
    setTimeout(() => {
      label.textContent = before;
      button.classList.remove('done', 'failed');
    }, 1200);
  }

  /** The facts of a decoded id: time three ways, then each field under the layout's names. */
  function factsFor(layout, parts, extra = []) {
    const rows = [
      ['Time (UTC)', h('dd', { class: 'big', 'data-part': 'utc' }, utcText(parts.unixMs))],
      ['Local time', h('dd', { 'data-part': 'local' }, localText(parts.unixMs))],
      ['That was', h('dd', { 'data-part': 'ago', 'data-ago-ms': parts.unixMs.toString() }, agoText(parts.unixMs))],
      ['Unix ms', h('dd', { 'data-part': 'unix-ms' }, parts.unixMs.toString())],
      [h('span', { class: 'f-timestamp' }, h('span', { class: 'swatch' }), 'timestamp'),
        h('dd', { 'data-field': 'timestamp', 'data-name': 'timestamp' }, parts.timestamp.toString(),
          h('span', { class: 'sub' }, ` ticks of ${number(layout.tickMs)} ms since `,
            h('span', { class: 'nowrap' }, utcText(layout.epochMs))))],
    ];
    for (const key of layout.order) {
      if (layout.bits[key] === 0) continue;
      rows.push([
        h('span', { class: `f-${key}` }, h('span', { class: 'swatch' }), layout.names[key]),
        h('dd', { 'data-field': key, 'data-name': layout.names[key] }, parts[key].toString()),
      ]);
    }
    rows.push(...extra);
    return h('dl', { class: 'facts' }, rows.map(([term, dd]) => [h('dt', {}, term), dd]));
  }

  /** Marks a result with its machine-readable parts, for scripts and tests. */
  function stamp(el, layout, parts) {
    Object.assign(el.dataset, {
      id: parts.id.toString(), layout: layout.name, unixMs: parts.unixMs.toString(),
      datacenter: parts.datacenter.toString(), worker: parts.worker.toString(),
      sequence: parts.sequence.toString(),
    });
  }

  function unstamp(el) {
    for (const key of ['id', 'layout', 'unixMs', 'datacenter', 'worker', 'sequence']) delete el.dataset[key];
  }

  // ---------------------------------------------------------------------------------------
  // The API, with the bearer token asked for once when the server answers 401.

  const TOKEN_KEY = 'snowmint.token';
  let tokenPrompt = null;

  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch (_) {
      return null;
    }
  }

  /** Shows the token form; every request waiting on a 401 resumes when it is sent. */
  function askForToken(refused) {
    if (!tokenPrompt) {
      tokenPrompt = new Promise((resolve) => {
        const form = $('auth');
        $('auth-why').textContent = refused
          ? 'The server refused that token. Enter it again.'
          : 'Enter it once: it is kept for this tab only and sent as a bearer token.';
        form.hidden = false;
        $('auth-token').focus();
        form.onsubmit = (event) => {
          event.preventDefault();
          const token = $('auth-token').value.trim();
          if (!token) return;
          try {
            sessionStorage.setItem(TOKEN_KEY, token);
          } catch (_) {
            memoryToken = token;
          }
          $('auth-token').value = '';
          form.hidden = true;
          tokenPrompt = null;
          resolve();
        };
      });
    }
    return tokenPrompt;
  }

  /** Where the token lives when sessionStorage is not allowed. */
  let memoryToken = null;

  /** GETs `path`: the JSON body and its raw text, or an Error with the server's message. */
  async function api(path) {
    for (;;) {
      const token = storedToken() || memoryToken;
      const headers = { Accept: 'application/json' };
      if (token) headers.Authorization = `Bearer ${token}`;
      const response = await fetch(path, { headers, cache: 'no-store' });
      if (response.status === 401) {
        if (token) {
          try { sessionStorage.removeItem(TOKEN_KEY); } catch (_) { /* not stored there */ }
          memoryToken = null;
        }
        await askForToken(Boolean(token));
        continue;
      }
      const text = await response.text();
      let body = null;
      try {
        body = JSON.parse(text);
      } catch (_) {
        body = null;
      }
      if (!response.ok) {
        throw new Error((body && body.error) || `the server answered ${response.status} ${response.statusText}`);
      }
      return { body, text };
    }
  }

  // ---------------------------------------------------------------------------------------
  // This server's layout, from GET /v1/layout.

  let serverLayout = null;
  let serverInfo = null;

  async function loadServer() {
    try {
      const { body, text } = await api('/v1/layout');
      // The epoch is read from the text, so it stays exact whatever its size.
      const epochMatch = /"epoch_ms"\s*:\s*(\d+)/.exec(text);
      // The server's layout is a preset's with, perhaps, its own epoch.
      const preset = PRESETS[body.layout] || CUSTOM;
      serverLayout = makeLayout('server', {
        bits: { ...body.bits },
        order: preset.order,
        names: preset.names,
        tickMs: BigInt(body.tick_ms),
        epochMs: epochMatch ? BigInt(epochMatch[1]) : BigInt(body.epoch_ms),
      });
      serverLayout.label = body.layout;
      serverInfo = body;
      renderAbout();
      const option = $('parse-layout').querySelector('option[value="server"]');
      option.textContent = `This server's (${body.layout})`;
      parseNow();
      showSnippet();
      composeNow(false);
    } catch (err) {
      showError($('about-error'), `Could not read this server's layout: ${err.message}`);
      $('about-stats').removeAttribute('aria-busy');
      parseNow();
    }
  }

  /** A date as a stat's value, its time and `more` beneath. */
  function dateAndTime(ms, more) {
    const [date, time] = utcText(ms).split(' ');
    return time ? [date, h('span', {}, `${time} UTC; `, more)] : [utcText(ms), more];
  }

  function renderAbout() {
    const info = serverInfo;
    const stats = $('about-stats');
    const b = info.bits;
    const stat = (term, key, value, sub) => h('div', { class: `stat stat-${key}` },
      h('dt', {}, term), h('dd', { 'data-about': key }, value, sub && h('span', { class: 'sub' }, sub)));
    const runsOut = BigInt(info.runs_out_ms);
    // No datacenter or worker while the server waits for its worker-id lease.
    const held = (value, bits) => (value === null || value === undefined
      ? ['—', 'none yet: waiting for a worker-id lease']
      : [String(value), `of 0–${number(mask(bits))}`]);
    const lease = info.lease || null;
    const clock = info.clock || null;
    // What a rollback does, in the words of the policy's own documentation.
    const rollbackText = (c) => ({
      refuse: 'a clock set back is refused with the gap',
      wait: `a clock set back is waited for, up to ${number(c.rollback_wait_ms)} ms`,
      logical: 'a clock set back is run ahead of, tick by tick',
      spare: `a clock set back gets the newest tick's spare numbers, then a wait of up to ${number(c.rollback_wait_ms)} ms`,
    })[c.rollback] || c.rollback;
    const clockText = (c) => (c.ids_tell_time
      ? `rollback ${c.rollback}: ${c.mode === 'wall' ? rollbackText(c) : 'no step of the wall clock reaches it'}`
      : 'ids count spent sequences: their time field does not tell time');
    stats.replaceChildren(...[
      stat('Layout', 'layout', info.layout,
        `${b.timestamp} timestamp · ${b.datacenter} datacenter · ${b.worker} worker · ${b.sequence} sequence bits`),
      stat('Datacenter', 'datacenter', ...held(info.datacenter, b.datacenter)),
      stat('Worker', 'worker', ...held(info.worker, b.worker)),
      stat('Capacity', 'capacity', number(info.ids_per_second),
        `IDs per second per worker id; ${number(info.worker_ids)} worker ids`),
      stat('Epoch', 'epoch', ...dateAndTime(serverLayout.epochMs, `one tick is ${number(info.tick_ms)} ms`)),
      stat('Runs out', 'runs-out', ...dateAndTime(runsOut,
        h('span', { 'data-ago-ms': runsOut.toString() }, agoText(runsOut)))),
      clock && stat('Clock', 'clock', clock.mode, clockText(clock)),
      lease && stat('Worker-id lease', 'lease', `${lease.backend}, ${lease.state}`,
        [lease.valid_until ? `valid until ${lease.valid_until}` : 'does not expire',
          lease.error ? `; last error: ${lease.error}` : ''].join('')),
    ].filter(Boolean));
    stats.removeAttribute('aria-busy');
    // Until a lease is held the identity is unknown: look again shortly.
    if (lease && lease.state !== 'held') setTimeout(loadServer, 2000);
  }

  // ---------------------------------------------------------------------------------------
  // Generate.

  /** The most ids this server issues for one request (its `max_batch`). */
  const MAX_BATCH = BigInt(DATA.max_batch);
  /**
   * The most ids the list shows, the newest: a longer list only slows the page down. The
   * summary says when ids are left out of it, and "Copy all" copies every one.
   */
  const LIST_LIMIT = 1000;

  async function generate(event) {
    event.preventDefault();
    const error = $('gen-error');
    const countInput = $('gen-count');
    const text = countInput.value.trim();
    const count = /^\d+$/.test(text) ? BigInt(text) : 0n;
    if (count < 1n || count > MAX_BATCH) {
      // The server's words for the same count (`count_param`); a number field's value is
      // digits, a sign, a point or an exponent, which JSON quotes as Rust's {:?} does.
      countInput.setAttribute('aria-invalid', 'true');
      showError(error, `count ${JSON.stringify(text)} is out of range: expected a whole number 1..=${MAX_BATCH}`);
      return;
    }
    countInput.removeAttribute('aria-invalid');
    showError(error, '');
    const format = $('gen-format').value;
    const button = $('gen-button');
    button.disabled = true;
    button.textContent = 'Generating…';
    try {
      const { body } = await api(`/v1/ids?count=${count}&format=${encodeURIComponent(format)}`);
      showIds(body.ids, format);
    } catch (err) {
      showError(error, err.message);
    } finally {
      button.disabled = false;
      button.textContent = 'Generate';
    }
  }

  function showIds(ids, encodingName) {
    const list = $('gen-list');
    const listed = ids.slice(-LIST_LIMIT);
    list.replaceChildren(...listed.map((text) => h('li', {},
      h('code', {}, text),
      h('button', {
        class: 'small icon', type: 'button', title: 'Copy', 'aria-label': `Copy ${text}`,
        onclick: (e) => copyText(text, e.currentTarget),
      }, icon('copy'), h('span', { class: 'label' }, 'Copy')),
      h('button', {
        class: 'small icon', type: 'button', title: 'Parse', 'aria-label': `Parse ${text}`,
        onclick: () => inspect(text, encodingName),
      }, icon('parse'), h('span', { class: 'label' }, 'Parse')))));
    list.scrollTop = list.scrollHeight;
    $('gen-copy-all').onclick = (e) => copyText(ids.join('\n'), e.currentTarget);
    const summary = `${number(ids.length)} ${ids.length === 1 ? 'ID' : 'IDs'}, ${encodingName}`;
    $('gen-summary').textContent = listed.length < ids.length
      ? `${summary}; the newest ${number(listed.length)} listed`
      : summary;
    $('gen-output').hidden = false;
    $('gen-placeholder').hidden = true;

    const newest = ids[ids.length - 1];
    const decoded = $('gen-decoded');
    unstamp(decoded);
    if (!serverLayout) {
      decoded.replaceChildren(h('p', { class: 'note' }, "This server's layout is not available to decode with."));
      return;
    }
    try {
      // The encoding is known, so no guessing: all-digit hex stays hex.
      const raw = decodeAs(encodingName, newest);
      const parts = decodeWith(serverLayout, raw);
      decoded.replaceChildren(factsFor(serverLayout, parts,
        [['ID', h('dd', { 'data-part': 'id' }, h('code', {}, newest))]]));
      stamp(decoded, serverLayout, parts);
      if ($('parse-input').value.trim() === '') inspect(newest, encodingName, false);
    } catch (err) {
      decoded.replaceChildren(h('p', { class: 'error' }, err.message));
    }
  }

  /** Puts an id into Parse, written so that detection reads it in its own encoding. */
  function inspect(text, encodingName, focus = true) {
    const raw = decodeAs(encodingName, text);
    $('parse-input').value = guessEncoding(text) === encodingName ? text : raw.toString();
    parseNow();
    if (focus) $('parse').scrollIntoView({ behavior: 'smooth', block: 'start' });
  }

  // ---------------------------------------------------------------------------------------
  // Parse, and the bit diagram of what was parsed.

  const CUSTOM_INPUTS = ['epoch', 'tick', 'timestamp', 'datacenter', 'worker', 'sequence'];

  function customLayout() {
    const value = (key) => $(`custom-${key}`).value.trim();
    const bits = {};
    for (const key of ['timestamp', ...CUSTOM.order]) {
      const text = value(key);
      if (!/^\d+$/.test(text) || Number(text) > 64) {
        throw new InputError(`${key} bits must be a whole number from 0 to 64, got "${text}"`);
      }
      bits[key] = Number(text);
    }
    const tick = value('tick');
    if (!/^\d+$/.test(tick) || BigInt(tick) > U64_MAX) {
      throw new InputError(`tick must be a whole number of milliseconds, got "${tick}"`);
    }
    const epochMs = parseEpoch(value('epoch'));
    return checkLayout(makeLayout('custom', {
      bits, order: CUSTOM.order, names: CUSTOM.names, tickMs: BigInt(tick), epochMs,
    }));
  }

  /** An epoch as ms since the Unix epoch, or an RFC 3339 time (a bare date is midnight UTC). */
  function parseEpoch(text) {
    if (/^\d+$/.test(text)) {
      const ms = BigInt(text);
      if (ms > U64_MAX) throw new InputError(`epoch ${text} ms does not fit in 64 bits`);
      return ms;
    }
    const rfc3339 = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2}))?$/;
    const ms = rfc3339.test(text) ? Date.parse(text.replace(' ', 'T')) : NaN;
    if (Number.isNaN(ms)) {
      throw new InputError(`epoch "${text}" is neither milliseconds since the Unix epoch nor an RFC 3339 time`);
    }
    if (ms < 0) throw new InputError(`epoch "${text}" is before 1970, which a layout cannot start at`);
    return BigInt(ms);
  }

  /** The layout chosen for Parse, or null while this server's is still loading. */
  function chosenLayout() {
    const choice = $('parse-layout').value;
    if (choice === 'server') return serverLayout;
    if (choice === 'custom') return customLayout();
    return makeLayout(choice, PRESETS[choice]);
  }

  function parseNow() {
    const choice = $('parse-layout').value;
    $('custom').hidden = choice !== 'custom';
    const input = $('parse-input');
    const text = input.value.trim();
    const result = $('parse-result');
    const error = $('parse-error');
    unstamp(result);
    result.replaceChildren();
    input.removeAttribute('aria-invalid');
    showError(error, '');
    let layout = null;
    let parts = null;
    try {
      layout = chosenLayout();
      if (!layout) {
        $('parse-placeholder').textContent = $('about-error').hidden
          ? "Reading this server's layout…"
          : "This server's layout is not available: choose a preset.";
        $('parse-placeholder').hidden = false;
        drawBits(null, null);
        return;
      }
      if (text === '') {
        $('parse-placeholder').textContent = 'Paste an ID to see its time and fields.';
        $('parse-placeholder').hidden = false;
        drawBits(layout, null);
        remember(text, choice);
        return;
      }
      $('parse-placeholder').hidden = true;
      let raw;
      let encodingName;
      let signed;
      try {
        ({ raw, encodingName, signed } = readId(layout, text));
        parts = decodeWith(layout, raw);
      } catch (err) {
        input.setAttribute('aria-invalid', 'true');
        throw err;
      }
      const encodings = Object.values(ENCODINGS);
      const also = encodings
        .filter((e) => e.name !== encodingName)
        .map((e) => h('span', { class: 'mono' }, `${e.name} `, h('code', {}, encode(e.name, raw))));
      const readAs = [h('span', {}, encodingName)];
      if (signed) {
        readAs.push(h('span', { class: 'sub' }, " (a signed 64-bit column's: its two's complement)"));
      }
      // All digits at a padded encoding's width: say how to be read otherwise.
      const prefixed = encodings.find((e) => e.prefixes.length);
      if (encodingName === 'decimal' && prefixed
        && encodings.some((e) => e.padded && e.maxLen === text.length)) {
        const how = ` (all digits; write ${prefixed.name} as ${prefixed.prefixes[0]}…)`;
        readAs.push(h('span', { class: 'sub' }, how));
      }
      result.append(factsFor(layout, parts, [
        ['Read as', h('dd', { 'data-part': 'read-as' }, readAs)],
        ['Also', h('dd', { 'data-part': 'also' }, also.flatMap((el, i) => (i ? [h('br'), el] : [el])))],
      ]));
      stamp(result, layout, parts);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      showError(error, err.message);
      $('parse-placeholder').hidden = true;
      parts = null;
    }
    drawBits(layout, parts);
    remember(text, choice);
  }

  /** Keeps the id and layout in the address, so a parsed id can be shared as a link. */
  function remember(text, choice) {
    const params = new URLSearchParams();
    if (text) params.set('id', text);
    if (choice !== 'server') params.set('layout', choice);
    if (choice === 'custom') {
      for (const key of CUSTOM_INPUTS) params.set(key, $(`custom-${key}`).value.trim());
    }
    const hash = params.toString();
    if (hash !== window.location.hash.slice(1)) {
      history.replaceState(null, '', hash ? `#${hash}` : window.location.pathname + window.location.search);
    }
  }

  function restore() {
    const params = new URLSearchParams(window.location.hash.slice(1));
    const choice = params.get('layout');
    const select = $('parse-layout');
    if (choice && [...select.options].some((o) => o.value === choice)) select.value = choice;
    if (choice === 'custom') {
      for (const key of CUSTOM_INPUTS) if (params.has(key)) $(`custom-${key}`).value = params.get(key);
    }
    if (params.has('id')) $('parse-input').value = params.get('id');
  }

  // The diagram: rows of 64, 32 or 16 bits, whichever fits the width with readable digits.
  let drawn = { layout: null, parts: null };

  function bitsPerRow() {
    const width = $('diagram').clientWidth;
    if (width >= 900) return 64;
    if (width >= 400) return 32;
    return 16;
  }

  function drawBits(layout, parts) {
    drawn = { layout, parts };
    const diagram = $('diagram');
    const caption = $('bits-caption');
    const legend = $('legend').tBodies[0];
    if (!layout) {
      diagram.replaceChildren();
      legend.replaceChildren();
      caption.textContent = '';
      return;
    }
    const segs = segments(layout);
    const described = layout.name === 'server'
      ? `this server's layout (${layout.label})`
      : `the ${layout.name} layout`;
    caption.replaceChildren(parts
      ? h('span', {}, h('code', {}, parts.id.toString()), ` with ${described}`)
      : `${described[0].toUpperCase()}${described.slice(1)}; parse an ID to fill in its bits.`);
    const perRow = bitsPerRow();
    const cellWidth = diagram.clientWidth / perRow;
    const rows = [];
    for (let top = 63; top >= 0; top -= perRow) {
      const bottom = top - perRow + 1;
      const ruler = [];
      const cells = [];
      const labels = [];
      for (const seg of segs) {
        const hi = Math.min(seg.hi, top);
        const lo = Math.max(seg.lo, bottom);
        if (hi < lo) continue;
        const width = hi - lo + 1;
        const column = top - hi + 1;
        ruler.push(h('span', { class: 'ruler', style: `grid-column:${column}/span 1` }, hi));
        if (lo === bottom && width > 1) {
          ruler.push(h('span', { class: 'ruler end', style: `grid-column:${column + width - 1}/span 1` }, lo));
        }
        for (let bit = hi; bit >= lo; bit -= 1) {
          const one = parts ? ((parts.id >> BigInt(bit)) & 1n) === 1n : false;
          const classes = [`bit f-${seg.key}`, one && 'one', bit === seg.hi && 'first', bit === seg.lo && 'last'];
          cells.push(h('span', {
            class: classes.filter(Boolean).join(' '),
            style: `grid-column:${top - bit + 1}`,
            title: `bit ${bit}: ${seg.name}`,
          }, parts ? (one ? '1' : '0') : ''));
        }
        const px = width * cellWidth;
        labels.push(h('span', {
          class: `piece f-${seg.key}`,
          style: `grid-column:${column}/span ${width}`,
          title: `${seg.name}: ${seg.bits} bits`,
        }, px >= 30 ? h('b', {}, seg.name) : '', px >= 30 ? h('span', {}, width === seg.bits ? `${seg.bits} bits` : `${width} of ${seg.bits}`) : ''));
      }
      // Rows: indices above, bits, then names; each is a grid line of its own.
      rows.push(h('div', { class: 'drow', style: `--n:${perRow}` },
        ruler.map((el) => { el.style.gridRow = '1'; return el; }),
        cells.map((el) => { el.style.gridRow = '2'; return el; }),
        labels.map((el) => { el.style.gridRow = '3'; return el; })));
    }
    diagram.replaceChildren(...rows);
    diagram.dataset.layout = layout.name;
    diagram.setAttribute('aria-label', `64 bits: ${segs.map((s) => `${s.bits} ${s.name}`).join(', ')}`);

    legend.replaceChildren(...segs.map((seg) => {
      let value = '—';
      if (parts) {
        const v = seg.key === 'unused' ? parts.id >> BigInt(seg.lo) : parts[seg.key];
        value = [v.toString()];
        if (seg.key === 'timestamp') value.push(h('span', { class: 'sub' }, utcText(parts.unixMs)));
        if (seg.bits <= 16) value.push(h('span', { class: 'sub mono' }, `0b${v.toString(2).padStart(seg.bits, '0')}`));
      }
      return h('tr', { 'data-field': seg.key, 'data-name': seg.name },
        h('td', { class: `f-${seg.key}` }, h('span', { class: 'swatch' }), seg.name),
        h('td', { class: 'mono' }, seg.bits === 1 ? `${seg.hi}` : `${seg.hi}–${seg.lo}`),
        h('td', {}, `${seg.bits} ${seg.bits === 1 ? 'bit' : 'bits'}`),
        h('td', {}, value));
    }));
  }

  // ---------------------------------------------------------------------------------------
  // Compose: an id from its parts, as `/v1/compose` and `Layout::compose_at` write it, and
  // the first and last id of its tick (`Layout::ids_at`), with the layout chosen for Parse.

  const COMPOSE_PARTS = ['datacenter', 'worker', 'sequence'];
  const RANGE_NAMES = { datacenter: 'datacenter id', worker: 'worker id', sequence: 'sequence' };

  /** The instant asked for, in ms since the Unix epoch: now when empty. */
  function composeTime(text) {
    if (text === '') return BigInt(Date.now());
    if (/^\d+$/.test(text)) {
      if (BigInt(text) > U64_MAX) throw new InputError(`time ${text} ms does not fit in 64 bits`);
      return BigInt(text);
    }
    const rfc3339 = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2}))?$/;
    const ms = rfc3339.test(text) ? Date.parse(text.replace(' ', 'T')) : NaN;
    if (Number.isNaN(ms) || ms < 0) {
      throw new InputError(`time "${text}" is neither milliseconds since the Unix epoch nor an RFC 3339 time`);
    }
    return BigInt(ms);
  }

  /** A time as the core's `UnixMs` writes it in its messages. */
  const isoText = (ms) => (ms > LAST_DATE_MS
    ? `${ms} ms after the Unix epoch`
    : new Date(Number(ms)).toISOString());

  /** The tick an instant falls in: `Layout::tick_at`, with its message. */
  function tickAt(layout, unixMs) {
    const ticks = 1n << BigInt(layout.bits.timestamp);
    const end = layout.epochMs + ticks * layout.tickMs - 1n;
    const lastMs = end > U64_MAX ? U64_MAX : end;
    if (unixMs < layout.epochMs || unixMs > lastMs) {
      throw new InputError(
        `time ${isoText(unixMs)} is outside the layout's range ${isoText(layout.epochMs)}..=${isoText(lastMs)}`);
    }
    return (unixMs - layout.epochMs) / layout.tickMs;
  }

  const place = (layout, key, value) => value << BigInt(layout.shifts[key]);

  /** The id of `parts` at `unixMs`, refused in the order and words of `/v1/compose`. */
  function composeWith(layout, unixMs, texts) {
    const values = {};
    for (const key of COMPOSE_PARTS) {
      const text = texts[key];
      if (!/^\d+$/.test(text) || BigInt(text) > U64_MAX) {
        throw new InputError(`${key} ${JSON.stringify(text)} is not a whole number 0..=${U64_MAX}`);
      }
      values[key] = BigInt(text);
    }
    const tick = tickAt(layout, unixMs);
    for (const key of COMPOSE_PARTS) {
      const max = mask(layout.bits[key]);
      if (values[key] > max) {
        throw new InputError(`${RANGE_NAMES[key]} ${values[key]} is out of range 0..=${max}`);
      }
    }
    return COMPOSE_PARTS.reduce((id, key) => id | place(layout, key, values[key]),
      place(layout, 'timestamp', tick));
  }

  /** The smallest and largest id of the tick `unixMs` falls in. */
  function idsAt(layout, unixMs) {
    const first = place(layout, 'timestamp', tickAt(layout, unixMs));
    const last = COMPOSE_PARTS.reduce((id, key) => id | place(layout, key, mask(layout.bits[key])), first);
    return [first, last];
  }

  /** Every encoding of `id`, one per line. */
  const encodingsOf = (id, part) => h('dd', { 'data-part': part },
    Object.values(ENCODINGS).flatMap((e, i) => [i ? h('br') : false,
      h('span', { class: 'mono', 'data-encoding': e.name }, `${e.name} `, h('code', {}, encode(e.name, id)))]));

  function composeNow(draw = true) {
    const result = $('compose-result');
    const error = $('compose-error');
    result.replaceChildren();
    delete result.dataset.id;
    showError(error, '');
    let layout;
    try {
      layout = chosenLayout();
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      showError(error, err.message);
      return;
    }
    if (!layout) return;
    // The inputs in the layout's order, each under the layout's name for its field.
    const button = $('compose-button');
    for (const key of layout.order) {
      const name = layout.names[key] === key ? key : `${layout.names[key]} (${key})`;
      $(`compose-${key}-label`).textContent = layout.bits[key] === 0
        ? `${name}: none`
        : `${name}, 0–${mask(layout.bits[key])}`;
      button.before($(`compose-${key}`).parentElement);
    }
    const texts = Object.fromEntries(COMPOSE_PARTS.map((key) => [key, $(`compose-${key}`).value.trim()]));
    try {
      const unixMs = composeTime($('compose-time').value.trim());
      const id = composeWith(layout, unixMs, texts);
      const [first, last] = idsAt(layout, unixMs);
      const parts = decodeWith(layout, id);
      result.append(h('dl', { class: 'facts' },
        h('dt', {}, 'ID'), encodingsOf(id, 'id'),
        h('dt', {}, 'Time (UTC)'), h('dd', { 'data-part': 'utc' }, utcText(parts.unixMs)),
        h('dt', {}, 'First of its tick'), h('dd', { 'data-part': 'first' }, h('code', {}, first.toString())),
        h('dt', {}, 'Last of its tick'), h('dd', { 'data-part': 'last' }, h('code', {}, last.toString()))));
      Object.assign(result.dataset, {
        id: id.toString(), layout: layout.name, unixMs: unixMs.toString(),
        first: first.toString(), last: last.toString(),
      });
      if (draw) drawBits(layout, parts);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      showError(error, err.message);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Start.

  /** Fills in what the page knows only from the server's data. */
  function describe() {
    $('gen-count-label').textContent = `Count, 1–${number(MAX_BATCH)}`;
    $('gen-count').max = MAX_BATCH.toString();
    $('gen-format').replaceChildren(...Object.values(ENCODINGS).map((e) => h('option', { value: e.name }, e.title)));
    $('parse-encodings').replaceChildren(...encodingsText());
    $('parse-presets').replaceChildren(...Object.entries(PRESETS).map(([name, p]) => h('option', { value: name }, p.title)));
    $('custom-legend').textContent = `Custom layout (${['timestamp', ...CUSTOM.order].join(', ')}, high bits first)`;
    const first = { epoch: CUSTOM.epochMs, tick: CUSTOM.tickMs, ...CUSTOM.bits };
    for (const key of CUSTOM_INPUTS) $(`custom-${key}`).value = first[key].toString();
  }

  // ---------------------------------------------------------------------------------------
  // Use it from your language: each client's tested example, with the layout chosen under
  // Parse written where the example names "twitter".

  /** How a client names `layout`, and what it must be told besides: a preset's name, or
   *  custom:T/D/W/S with a tick and an epoch other than the defaults. */
  function clientSpec(layout) {
    const preset = Object.entries(PRESETS).find(([, p]) => ['timestamp', ...p.order].every(
      (key) => p.bits[key] === layout.bits[key]) && p.order.join() === layout.order.join());
    const twitter = PRESETS.twitter;
    const base = preset ? preset[1] : { tickMs: 1n, epochMs: twitter.epochMs };
    const spec = preset ? preset[0]
      : `custom:${layout.bits.timestamp}/${layout.bits.datacenter}/${layout.bits.worker}/${layout.bits.sequence}`;
    const extra = [];
    if (layout.tickMs !== base.tickMs) extra.push(`a tick of ${number(layout.tickMs)} ms`);
    if (layout.epochMs !== base.epochMs) extra.push(`the epoch ${layout.epochMs} ms (${utcText(layout.epochMs)})`);
    return { spec, extra };
  }

  function showSnippet() {
    const snippet = DATA.snippets.find((s) => s.language === $('clients-language').value)
      || DATA.snippets[0];
    let layout = null;
    try { layout = chosenLayout(); } catch { layout = null; }
    const { spec, extra } = layout ? clientSpec(layout) : { spec: 'twitter', extra: [] };
    $('clients-code').textContent = snippet.code.replace('"twitter"', JSON.stringify(spec));
    $('clients-code').dataset.layout = spec;
    $('clients-where').replaceChildren('The client: ', h('code', {}, `clients/${snippet.dir}/`),
      ' in the repository; this example is ', h('code', {}, `clients/${snippet.dir}/${snippet.file}`), '.');
    const note = $('clients-note');
    note.hidden = extra.length === 0;
    note.textContent = extra.length ? `This layout has ${extra.join(' and ')}: pass them to decode, as the client's README shows.` : '';
  }

  function start() {
    describe();
    $('clients-language').replaceChildren(...DATA.snippets.map((s) => h('option', { value: s.language }, s.language)));
    $('clients-language').addEventListener('change', showSnippet);
    $('parse-layout').addEventListener('change', showSnippet);
    for (const key of CUSTOM_INPUTS) $(`custom-${key}`).addEventListener('input', showSnippet);
    showSnippet();
    restore();
    $('gen-form').addEventListener('submit', generate);
    $('parse-form').addEventListener('submit', (event) => { event.preventDefault(); parseNow(); });
    $('parse-input').addEventListener('input', parseNow);
    $('parse-layout').addEventListener('change', parseNow);
    for (const key of CUSTOM_INPUTS) $(`custom-${key}`).addEventListener('input', parseNow);
    $('parse-layout').addEventListener('change', () => composeNow(false));
    for (const key of CUSTOM_INPUTS) $(`custom-${key}`).addEventListener('input', () => composeNow(false));
    $('compose-form').addEventListener('submit', (event) => { event.preventDefault(); composeNow(); });
    for (const key of ['time', ...COMPOSE_PARTS]) $(`compose-${key}`).addEventListener('input', () => composeNow());
    // Redraw on a change of width only, and in the next frame, never inside the observer.
    let lastWidth = 0;
    new ResizeObserver((entries) => {
      const width = Math.round(entries[0].contentRect.width);
      if (width === lastWidth) return;
      lastWidth = width;
      requestAnimationFrame(() => drawBits(drawn.layout, drawn.parts));
    }).observe($('diagram'));
    setInterval(refreshAgo, 1000);
    parseNow();
    composeNow(false);
    loadServer();
  }

  start();
})();
