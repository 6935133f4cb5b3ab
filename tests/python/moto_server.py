"""Runs moto (S3 + DynamoDB emulator) on 127.0.0.1 for the Rust tests and exits when its stdin closes.

Prints the port on the first line of stdout once the server answers. The parent keeps our stdin open for
as long as it lives, so the server never outlives the test process that started it.
"""

import sys
import urllib.request

from moto.server import ThreadedMotoServer


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    actual = server._server.server_port
    urllib.request.urlopen(f"http://127.0.0.1:{actual}/moto-api/", timeout=10).read()
    print(actual, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
