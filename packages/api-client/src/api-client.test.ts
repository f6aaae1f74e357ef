import http from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from './api-client.js';
import { ApiError } from './ironic-fault.js';

/** An API stand-in that records each request and answers what `reply` says. */
async function startServer(reply: (req: http.IncomingMessage, body: string) => { status: number; body?: unknown }) {
  const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const answer = reply(req, body);
      res.writeHead(answer.status, { 'Content-Type': 'application/json', Location: '/somewhere' });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const FAULT = {
  error_message: JSON.stringify({ faultcode: 'Client', faultstring: 'Node x could not be found.', debuginfo: null }),
};

describe('ApiClient', () => {
  let api: Awaited<ReturnType<typeof startServer>>;
  let states: string[] = [];
  beforeAll(async () => {
    api = await startServer((req) => {
      if (req.url === '/v1/nodes/missing') return { status: 404, body: FAULT };
      if (req.url === '/v1/nodes/n1') {
        const state = states.shift() ?? 'active';
        return { status: 200, body: { uuid: 'n1', provision_state: state, reservation: null, last_error: 'boom' } };
      }
      return { status: 202 };
    });
  });
  afterAll(async () => {
    await new Promise((resolve) => api.server.close(resolve));
  });

  it('sends the microversion, http_basic credentials and JSON; keeps the answer whole', async () => {
    const client = new ApiClient(api.url, { version: '1.81', basicAuth: { username: 'admin', password: 's3cret' } });
    try {
      const answer = await client.request('PUT', '/v1/nodes/n2/states/provision', { target: 'manage' });
      expect(answer).toMatchObject({ status: 202, body: undefined, text: '' });
      expect(answer.headers.get('location')).toBe('/somewhere');
      const sent = api.seen.at(-1);
      expect(sent?.headers['x-openstack-ironic-api-version']).toBe('1.81');
      expect(sent?.headers.authorization).toBe(`Basic ${Buffer.from('admin:s3cret').toString('base64')}`);
      expect(sent?.headers['content-type']).toBe('application/json');
      expect(JSON.parse(sent?.body ?? '')).toEqual({ target: 'manage' });
    } finally {
      client.close();
    }
  });

  it('turns an unexpected answer into an ApiError carrying the Ironic fault', async () => {
    const client = new ApiClient(api.url);
    try {
      const error = await client.expect(200, 'GET', '/v1/nodes/missing').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ status: 404, fault: { faultstring: 'Node x could not be found.' } });
      expect((error as Error).message).toBe('GET /v1/nodes/missing: expected 200, got 404: Node x could not be found.');
    } finally {
      client.close();
    }
  });

  it('waits for a provision state, and stops at once on a failed state', async () => {
    const client = new ApiClient(api.url);
    try {
      states = ['deploying', 'wait call-back', 'active'];
      expect(await client.waitForProvisionState('n1', 'active', 5000)).toMatchObject({ provision_state: 'active' });
      states = ['deploying', 'deploy failed', 'active'];
      await expect(client.waitForProvisionState('n1', 'active', 5000)).rejects.toThrow(
        'node n1 went to "deploy failed" waiting for "active": boom',
      );
      states = Array(100).fill('deploying');
      await expect(client.settled('n1', 'active', 300)).rejects.toThrow(
        /timed out after 300 ms waiting for node n1 to settle in "active": now "deploying"/,
      );
    } finally {
      client.close();
    }
  });

  it('sends a request again once when the API closed the pooled connection it went out on', async () => {
    // A server that answers the first request of each connection with keep-alive, then drops the
    // connection on the next one unanswered: what a keep-alive timeout running out looks like.
    const requestsSeen: string[] = [];
    const sockets = new Set<Socket>();
    const server = createTcpServer((socket) => {
      sockets.add(socket);
      let answered = 0;
      socket.on('data', (chunk) => {
        requestsSeen.push(chunk.toString('latin1').split(' ', 2).join(' '));
        if (answered++ > 0) {
          socket.destroy();
          return;
        }
        const body = JSON.stringify({ answer: requestsSeen.length });
        socket.write(
          `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n${body}`,
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new ApiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      expect(await client.request('GET', '/v1/nodes')).toMatchObject({ status: 200, body: { answer: 1 } });
      // Goes out on the pooled connection, which the server drops; sent again on a new one.
      expect(await client.request('POST', '/v1/nodes', { name: 'n' })).toMatchObject({
        status: 200,
        body: { answer: 3 },
      });
      expect(requestsSeen).toEqual(['GET /v1/nodes', 'POST /v1/nodes', 'POST /v1/nodes']);
      expect(sockets.size).toBe(2);
    } finally {
      client.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
