import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createRootLogger, createSilentLogger, type Logger } from '@bmaas/common';
import { describe, expect, it, vi } from 'vitest';
import { type BootConfigAnswer, DISCOVERY_NODE } from './boot-config-controller.js';
import { createBootConfigHandler } from './boot-config-router.js';
import type { BootRequestEvent, BootRequestObserver } from './boot-request-observer.js';

class RecordingObserver implements BootRequestObserver {
  readonly events: BootRequestEvent[] = [];
  observe(event: BootRequestEvent): void {
    this.events.push(event);
  }
}

/** The handler on a loopback port with a controller answering `answer` (or throwing it when it is an Error). */
async function handlerWith(
  answer: BootConfigAnswer | Error,
  observers: BootRequestObserver[],
  logger: Logger = createSilentLogger(),
) {
  const controller = {
    answer: async (): Promise<BootConfigAnswer> => {
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  const handler = createBootConfigHandler(controller, logger, observers);
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    get: async (path: string, method = 'GET') => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, { method });
      await response.text();
      return response.status;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const NODE = '5d1c0b8e-7f7c-4d0e-9a55-3d2c1b0a9f8e';
const MAC = '52:54:00:aa:00:01';

describe('boot request observers', () => {
  it('each observer hears of a served request once, with name, MAC, node and duration', async () => {
    const [first, second] = [new RecordingObserver(), new RecordingObserver()];
    const served: BootConfigAnswer = { ok: true, content: '#!ipxe\n', nodeUuid: NODE, mac: MAC };
    const api = await handlerWith(served, [first, second]);
    try {
      expect(await api.get(`/v1/boot/52-54-00-AA-00-01/boot.ipxe`)).toBe(200);
    } finally {
      await api.close();
    }
    for (const observer of [first, second]) {
      expect(observer.events).toHaveLength(1);
      expect(observer.events[0]).toMatchObject({ outcome: 'served', name: 'boot.ipxe', mac: MAC, nodeUuid: NODE });
      expect(observer.events[0]?.durationSeconds).toBeGreaterThan(0);
      expect(observer.events[0]?.durationSeconds).toBeLessThan(60);
    }
  });

  it('hears the refusal reason the requester never sees', async () => {
    const observer = new RecordingObserver();
    const refused: BootConfigAnswer = { ok: false, reason: 'state-not-allowed', mac: MAC, nodeUuid: NODE };
    const api = await handlerWith(refused, [observer]);
    try {
      expect(await api.get(`/v1/boot/${MAC}/grub.cfg`)).toBe(404);
      // Malformed before the controller: no name and no MAC.
      expect(await api.get('/v1/boot/only-one-segment')).toBe(404);
      expect(await api.get(`/v1/boot/${MAC}/boot.ipxe`, 'POST')).toBe(404);
    } finally {
      await api.close();
    }
    expect(observer.events.map((e) => [e.outcome, e.name, e.mac, e.nodeUuid])).toEqual([
      ['state-not-allowed', 'grub.cfg', MAC, NODE],
      ['malformed-request', undefined, undefined, undefined],
      ['malformed-request', undefined, undefined, undefined],
    ]);
  });

  it('hears a failed request (500) as server-error', async () => {
    const observer = new RecordingObserver();
    const api = await handlerWith(new Error('controller broke'), [observer]);
    try {
      expect(await api.get(`/v1/boot/${MAC}/boot.ipxe`)).toBe(500);
    } finally {
      await api.close();
    }
    expect(observer.events.map((e) => [e.outcome, e.name])).toEqual([['server-error', 'boot.ipxe']]);
  });

  it('answers as before without observers', async () => {
    const api = await handlerWith({ ok: true, content: 'x', nodeUuid: NODE, mac: MAC }, []);
    try {
      expect(await api.get(`/v1/boot/${MAC}/boot.ipxe`)).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('logs an observer that throws, and the others still hear of the request', async () => {
    const logged: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logged.push(chunk.toString()));
    const failing = {
      observe: () => {
        throw new Error('observer bug');
      },
    };
    const observer = new RecordingObserver();
    const served: BootConfigAnswer = { ok: true, content: '#!ipxe\n', nodeUuid: NODE, mac: MAC };
    const api = await handlerWith(
      served,
      [failing, observer],
      createRootLogger({ level: 'error', format: 'json', stream }),
    );
    try {
      expect(await api.get(`/v1/boot/${MAC}/boot.ipxe`)).toBe(200);
      expect(await api.get(`/v1/boot/${MAC}/boot.ipxe`)).toBe(200);
    } finally {
      await api.close();
    }
    expect(observer.events).toHaveLength(2);
    // The logger writes to its stream a little later.
    await vi.waitFor(() => expect(logged.join('').match(/boot request observer failed/g)).toHaveLength(2));
  });

  it('reports the discovery script as served to no node', async () => {
    const observer = new RecordingObserver();
    const api = await handlerWith({ ok: true, content: '#!ipxe\n', nodeUuid: DISCOVERY_NODE, mac: MAC }, [observer]);
    try {
      expect(await api.get(`/v1/boot/${MAC}/discovery.ipxe`)).toBe(200);
    } finally {
      await api.close();
    }
    expect(observer.events.map((e) => [e.outcome, e.name, e.nodeUuid])).toEqual([
      ['served', 'discovery.ipxe', undefined],
    ]);
  });
});
