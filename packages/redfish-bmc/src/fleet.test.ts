import { afterEach, describe, expect, it } from 'vitest';
import { fleetAddress, latencyDraw, type RedfishFleet, type RedfishFleetOptions, startRedfishFleet } from './fleet.js';
import { parseFleetOptions } from './fleet-options.js';

const running: RedfishFleet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((fleet) => fleet.close()));
});

const FAST = { medianMs: 2, p99Ms: 5, maxMs: 10 };

async function start(overrides: Partial<RedfishFleetOptions> = {}) {
  const fleet = await startRedfishFleet({
    count: 30,
    firstAddress: '127.3.0.250',
    latency: FAST,
    errorRate: 0,
    timeoutRate: 0,
    changesPerMinute: 0,
    password: 'secret',
    ...overrides,
  });
  running.push(fleet);
  const basic = `Basic ${Buffer.from('admin:secret').toString('base64')}`;
  const call = async (index: number, method: string, path: string, body?: unknown, headers = {}) => {
    const res = await fetch(`${fleet.url(index)}${path}`, {
      method,
      headers: { Authorization: basic, ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(2000),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  return { fleet, call };
}

describe('the simulated BMC fleet', () => {
  it('numbers its BMCs across 127.0.0.0/8, skipping .0 and .255', () => {
    expect(fleetAddress('127.1.0.1', 0)).toBe('127.1.0.1');
    expect(fleetAddress('127.1.0.1', 253)).toBe('127.1.0.254');
    expect(fleetAddress('127.1.0.1', 254)).toBe('127.1.1.1');
    expect(fleetAddress('127.1.255.254', 1)).toBe('127.2.0.1');
    expect(() => fleetAddress('10.0.0.1', 0)).toThrow(/127\.0\.0\.0\/8/);
  });

  it('draws latencies with the median and tail asked for, never past the cut', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const draws = Array.from({ length: 20_000 }, () =>
      latencyDraw({ medianMs: 150, p99Ms: 1000, maxMs: 2000 }, random),
    );
    draws.sort((a, b) => a - b);
    expect(draws[10_000]).toBeGreaterThan(135);
    expect(draws[10_000]).toBeLessThan(165);
    expect(draws[19_800]).toBeGreaterThan(800);
    expect(draws[19_800]).toBeLessThan(1250);
    expect(draws.at(-1)).toBeLessThanOrEqual(2000);
  });

  it('gives every BMC its own system, power state, health and sessions', async () => {
    const { fleet, call } = await start();
    expect(new Set(fleet.bmcs.map((b) => b.address)).size).toBe(30);
    expect(fleet.bmcs[6]?.address).toBe('127.3.1.2');

    expect(
      (await call(6, 'POST', `${fleet.systemPath}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceOff' })).status,
    ).toBe(204);
    const seventh = fleet.bmcs[7];
    if (seventh) seventh.system.health = 'Critical';
    const six = await call(6, 'GET', fleet.systemPath);
    const seven = await call(7, 'GET', fleet.systemPath);
    expect(six.body).toMatchObject({ PowerState: 'Off', Status: { Health: 'OK' }, SerialNumber: 'SN-FLEET-6' });
    expect(seven.body).toMatchObject({ PowerState: 'On', Status: { Health: 'Critical' } });

    const login = await call(3, 'POST', '/redfish/v1/SessionService/Sessions', {
      UserName: 'admin',
      Password: 'secret',
    });
    expect(login.status).toBe(201);
    const token = login.headers.get('x-auth-token') as string;
    const withToken = async (index: number) =>
      (await fetch(`${fleet.url(index)}${fleet.systemPath}`, { headers: { 'X-Auth-Token': token } })).status;
    expect(await withToken(3)).toBe(200);
    expect(await withToken(4)).toBe(401);
    expect((await call(3, 'DELETE', login.headers.get('location') as string)).status).toBe(204);
    expect(await withToken(3)).toBe(401);
    expect(
      (await call(3, 'POST', '/redfish/v1/SessionService/Sessions', { UserName: 'admin', Password: 'x' })).status,
    ).toBe(401);
    expect((await call(3, 'GET', '/redfish/v1/Managers')).body.error.code).toBe('Base.1.8.ResourceMissingAtURI');

    const stats = fleet.stats(Date.now() + 1);
    expect(stats).toMatchObject({ bmcs: 30, neverRead: 27, notReadSince: 30, sessionsOpened: 1, sessionsOpen: 0 });
    expect(stats.answers['401']).toBe(3);
  });

  it('counts requests in flight per BMC', async () => {
    const { fleet, call } = await start({ latency: { medianMs: 100, p99Ms: 100, maxMs: 100 } });
    await Promise.all([call(1, 'GET', fleet.systemPath), call(2, 'GET', fleet.systemPath)]);
    expect(fleet.stats()).toMatchObject({ maxInFlight: 1, overlapping: 0 });
    await Promise.all([call(1, 'GET', fleet.systemPath), call(1, 'GET', fleet.systemPath)]);
    expect(fleet.stats()).toMatchObject({ maxInFlight: 2, overlapping: 1 });
    expect(fleet.bmcs[1]?.inFlight).toBe(0);
  });

  it('answers 5xx and drops requests at the rates asked for', async () => {
    const failing = await start({ errorRate: 1 });
    const answer = await failing.call(0, 'GET', failing.fleet.systemPath);
    expect([500, 503]).toContain(answer.status);

    const silent = await start({ firstAddress: '127.3.2.1', timeoutRate: 1, hangMs: 60_000 });
    await expect(silent.call(0, 'GET', silent.fleet.systemPath)).rejects.toThrow();
    expect(silent.fleet.stats().answers.timeout).toBe(1);
    // the client gave up: the request is no longer in flight
    await expect.poll(() => silent.fleet.bmcs[0]?.inFlight, { timeout: 2000 }).toBe(0);
  });

  it('changes power and health out of band at the rate asked for', async () => {
    const { fleet } = await start({ count: 10, changesPerMinute: 600 });
    await expect.poll(() => fleet.stats().changes, { timeout: 3000, interval: 100 }).toBeGreaterThanOrEqual(10);
  });

  it('reads its command line', () => {
    expect(parseFleetOptions(['--count', '5', '--median-ms', '20', '--error-rate', '0.01'])).toMatchObject({
      count: 5,
      latency: { medianMs: 20, p99Ms: 1000, maxMs: 2000 },
      errorRate: 0.01,
    });
    expect(() => parseFleetOptions(['--count', '5', '--error-rate', '2'])).toThrow(/share from 0 to 1/);
    expect(() => parseFleetOptions([])).toThrow(/--count/);
  });
});
