import os

from snowmint import Client, decode

client = Client(os.environ.get("SNOWMINT_URL", "http://127.0.0.1:8080"))
new_id = client.next_id()
parts = decode(new_id, "twitter")
print(new_id, parts.time.isoformat(timespec="milliseconds"))
print(f"datacenter={parts.datacenter} worker={parts.worker} sequence={parts.sequence}")
