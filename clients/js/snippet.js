import { Client, decode } from "snowmint";

const client = new Client(process.env.SNOWMINT_URL ?? "http://127.0.0.1:8080");
const id = await client.nextId();
const { time, datacenter, worker, sequence } = decode(id, "twitter");
console.log(`${id} ${time.toISOString()} datacenter=${datacenter} worker=${worker} sequence=${sequence}`);
