"""A client of Twitter's Snowflake service, built from its IDL by the Thrift compiler.

Usage: client.py HOST:PORT AGENTS_JSON

The module `snowflake` is what
`thrift --gen py crates/snowmint-proto/proto/thrift/snowflake.thrift` writes; the test puts it
on PYTHONPATH. Over one framed, binary connection, as Twitter's clients spoke,
this calls get_worker_id, get_datacenter_id and get_timestamp, then get_id once for each
user agent of AGENTS_JSON (a JSON list of strings), in order, and prints one JSON object:

    {"worker_id": W, "datacenter_id": D, "timestamp": T,
     "calls": [{"agent": A, "id": ID} or {"agent": A, "error": {"type": N, "message": M}}]}

A refusal (a TApplicationException) keeps the connection, as the service promises.
"""

import json
import sys

from snowflake import Snowflake
from thrift.Thrift import TApplicationException
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    agents = json.loads(sys.argv[2])
    socket = TSocket.TSocket(host, int(port))
    socket.setTimeout(30_000)
    transport = TTransport.TFramedTransport(socket)
    client = Snowflake.Client(TBinaryProtocol.TBinaryProtocol(transport))
    transport.open()
    try:
        answers = {
            "worker_id": client.get_worker_id(),
            "datacenter_id": client.get_datacenter_id(),
            "timestamp": client.get_timestamp(),
            "calls": [],
        }
        for agent in agents:
            try:
                answers["calls"].append({"agent": agent, "id": client.get_id(agent)})
            except TApplicationException as e:
                error = {"type": e.type, "message": e.message}
                answers["calls"].append({"agent": agent, "error": error})
    finally:
        transport.close()
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
