// A fake's HTTP server on 127.0.0.1 (a kernel-chosen port), closed with its open connections.
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface LoopbackServer {
  readonly endpoint: string;
  close(): Promise<void>;
}

export async function listenLoopback(handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<LoopbackServer> {
  const server = createServer((req, res) => { void handle(req, res); });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
