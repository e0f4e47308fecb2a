// snippet.js, the program the docs page shows, runs against the server and prints the id
// it got, decoded. The page swaps its one "twitter" for the layout it shows.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";

const SERVER = process.env.SNOWMINT_URL;
const snippet = fileURLToPath(new URL("../snippet.js", import.meta.url));

test("the snippet is short and names its layout once, as the literal \"twitter\"", () => {
  const text = readFileSync(snippet, "utf8");
  assert.equal(text.split('"twitter"').length - 1, 1);
  const code = text.split("\n").filter((line) => line.trim() !== "");
  assert.ok(code.length <= 12, `${code.length} lines`);
});

test("the snippet gets an id from the server and prints it decoded", { skip: SERVER ? false : "SNOWMINT_URL is not set", timeout: 10_000 }, async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [snippet], {
    env: { ...process.env, SNOWMINT_URL: SERVER },
  });
  process.stdout.write(`# snippet printed: ${stdout}`);
  assert.match(stdout, /^[0-9]+ 20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z datacenter=1 worker=7 sequence=[0-9]+\n$/);
});
