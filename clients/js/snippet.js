import { Client, decode } from "snowmint";

const client = new Client(process.env.SNOWMINT_URL ?? "http://127.0.0.1:8080");
const id = await client.nextId();
const { date, datacenter, worker, sequence } = decode(id, "twitter");
console.log(`${id} ${date.toISOString()} datacenter=${datacenter} worker=${worker} sequence=${sequence}`);
