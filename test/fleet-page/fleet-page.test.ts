import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '@bmaas/api-client';
import { ensureInstallCredentials, type InstallCredentials, waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNFETCHED_INSTANCE_INFO } from '../support/instance-image.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { startTestServices } from '../support/test-services.js';

/**
 * The fleet page in a real browser (Debian's chromium, driven by
 * playwright-core) against a real stack: two conductors and the API on a
 * test database, authenticated with an install's generated credentials as
 * `npm start` is. Nodes in four provision states, one served and one refused
 * boot request; the page must show them all, and a screenshot is kept at
 * test/artifacts/fleet-page.png.
 */

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = fileURLToPath(new URL('../artifacts/fleet-page.png', import.meta.url));
const BOOT_MAC = '52:54:00:f1:ee:01';
const UNKNOWN_MAC = '52:54:00:f1:ee:99';
/** The page polls every 5 s; a busy two-core machine may be slow to start Chromium and render. */
const PAGE_TIMEOUT_MS = 45_000;

/** What the page shows, read from its tables. */
interface PageView {
  conductors: Array<{ hostname: string; alive: string; nodes: number; share: string }>;
  states: Record<string, number>;
  boots: Array<{ outcome: string; text: string }>;
}

function readPage(page: Page): Promise<PageView> {
  return page.evaluate(() => {
    const rows = (table: string) => [...document.querySelectorAll<HTMLTableRowElement>(`#${table} tbody tr`)];
    const cellText = (row: HTMLTableRowElement, index: number) => row.cells[index]?.textContent ?? '';
    return {
      conductors: rows('conductors').map((r) => ({
        hostname: r.dataset.hostname ?? '',
        alive: r.dataset.alive ?? '',
        nodes: Number(cellText(r, 3)),
        share: cellText(r, 4),
      })),
      states: Object.fromEntries(rows('states').map((r) => [r.dataset.state ?? '', Number(cellText(r, 1))])),
      boots: rows('boot-requests').map((r) => ({ outcome: r.dataset.outcome ?? '', text: r.textContent ?? '' })),
    };
  });
}

const chromiumProblem = existsSync(CHROMIUM)
  ? null
  : `${CHROMIUM} is missing (apt-get install -y --no-install-recommends chromium; see test/debian-packages.txt)`;

describe.skipIf(missingPrerequisite('fleet page', chromiumProblem))('the fleet page in Chromium', () => {
  let database: TestDatabase;
  let stack: Services;
  let credentials: InstallCredentials;
  let credentialsDir: string;
  let rest: ApiClient;
  let browser: Browser;
  const nodeOf: Record<string, string> = {};

  beforeAll(async () => {
    database = await createTestDatabase();
    credentialsDir = await mkdtemp(join(tmpdir(), 'bmaas-fleet-page-'));
    credentials = ensureInstallCredentials(join(credentialsDir, 'credentials'));
    stack = await startTestServices({
      databaseUrl: database.url,
      conductors: 2,
      api: true,
      startTimeoutMs: 60_000,
      configFiles: [credentials.configFile],
      env: {
        BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake',
        BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
      },
    });
    const login = Buffer.from(`${credentials.apiUser}:${credentials.apiPassword}`).toString('base64');
    rest = new ApiClient(stack.apiUrl as string, { headers: { Authorization: `Basic ${login}` } });

    const create = async (name: string, fields: Record<string, unknown> = {}) => {
      const node = await rest.createNode({ driver: 'fake-hardware', name, automated_clean: false, ...fields });
      nodeOf[name] = node.uuid;
      return node.uuid;
    };
    await create('fleet-enroll');
    const manageable = await create('fleet-manageable');
    const available = await create('fleet-available');
    const booting = await create('fleet-booting', {
      deploy_interface: 'direct',
      instance_info: UNFETCHED_INSTANCE_INFO,
    });
    await rest.createPort(booting, BOOT_MAC);
    for (const uuid of [manageable, available, booting]) {
      expect((await rest.provision(uuid, 'manage')).status).toBe(202);
      await rest.settled(uuid, 'manageable');
    }
    for (const uuid of [available, booting]) {
      expect((await rest.provision(uuid, 'provide')).status).toBe(202);
      await rest.settled(uuid, 'available');
    }
    expect((await rest.provision(booting, 'active')).status).toBe(202);
    await rest.settled(booting, 'wait call-back');

    // The fake boot interface serves boot.fake while the node's deploy ramdisk is prepared.
    const served = await fetch(`${stack.apiUrl}/v1/boot/${BOOT_MAC}/boot.fake`, {
      signal: AbortSignal.timeout(10_000),
    });
    expect(served.status).toBe(200);
    const refused = await fetch(`${stack.apiUrl}/v1/boot/${UNKNOWN_MAC}/boot.ipxe`, {
      signal: AbortSignal.timeout(10_000),
    });
    expect(refused.status).toBe(404);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
      timeout: 60_000,
    });
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await database?.drop();
    if (credentialsDir) await rm(credentialsDir, { recursive: true, force: true });
  });

  it('shows the conductors with their ring share, the nodes by state and the last boot requests', async () => {
    const context = await browser.newContext({
      httpCredentials: { username: credentials.apiUser, password: credentials.apiPassword },
      viewport: { width: 1280, height: 900 },
    });
    try {
      const page = await context.newPage();
      const answer = await page.goto(`${stack.apiUrl}/`, { timeout: PAGE_TIMEOUT_MS });
      expect(answer?.status()).toBe(200);
      expect(answer?.headers()['content-type']).toBe('text/html; charset=utf-8');

      const hostnames = stack.conductors.map((c) => c.hostname).sort();
      let view: PageView | undefined;
      view = await waitFor(
        'the page to show both conductors, the four states and both boot requests',
        async () => {
          view = await readPage(page);
          const complete =
            hostnames.every((h) => view?.conductors.some((c) => c.hostname === h && c.alive === 'true')) &&
            Object.keys(view.states).length === 4 &&
            view.boots.length === 2;
          return complete ? view : undefined;
        },
        { timeoutMs: PAGE_TIMEOUT_MS, intervalMs: 250, describe: () => JSON.stringify(view) },
      );

      expect(view.states).toEqual({ enroll: 1, manageable: 1, available: 1, 'wait call-back': 1 });
      expect(await page.textContent('#nodes-total')).toBe('4');

      // Ring share: what the API says each node's conductor is, counted per conductor.
      const listed = await new ApiClient(stack.apiUrl as string, {
        version: '1.49',
        basicAuth: { username: credentials.apiUser, password: credentials.apiPassword },
      }).request<{ nodes: Array<{ conductor: string | null }> }>('GET', '/v1/nodes?fields=uuid,conductor');
      const owned = new Map<string, number>();
      for (const node of listed.body.nodes) owned.set(node.conductor ?? '', (owned.get(node.conductor ?? '') ?? 0) + 1);
      for (const conductor of view.conductors.filter((c) => hostnames.includes(c.hostname))) {
        const count = owned.get(conductor.hostname) ?? 0;
        expect(conductor.nodes, conductor.hostname).toBe(count);
        expect(conductor.share).toBe(`${((100 * count) / 4).toFixed(1)} %`);
      }
      expect(view.conductors.reduce((sum, c) => sum + c.nodes, 0)).toBe(4);

      // Newest first: the refusal, then the served request.
      const [refusal, servedRow] = view.boots;
      expect(refusal?.outcome).toBe('unknown-mac');
      expect(refusal?.text).toContain('refused: unknown-mac');
      expect(refusal?.text).toContain(UNKNOWN_MAC);
      expect(refusal?.text).toContain('boot.ipxe');
      expect(servedRow?.outcome).toBe('served');
      expect(servedRow?.text).toContain(BOOT_MAC);
      expect(servedRow?.text).toContain('boot.fake');
      expect(servedRow?.text).toContain(nodeOf['fleet-booting']);
      expect(await page.textContent('#boot-process')).toContain(`pid ${stack.api?.pid}`);
      expect(await page.textContent('#status')).toMatch(/^Updated /);

      await mkdir(dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(existsSync(SCREENSHOT)).toBe(true);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('answers 401 to the page and its data without credentials', async () => {
    const html = { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
    for (const [path, headers] of [
      ['/', html],
      ['/dashboard', html],
      ['/dashboard/fleet.js', {}],
      ['/dashboard/boot-requests', {}],
      ['/v1/nodes', {}],
    ] as const) {
      const response = await fetch(`${stack.apiUrl}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
      expect(response.status, path).toBe(401);
    }
    // The versions document stays public for JSON clients.
    const root = await fetch(`${stack.apiUrl}/`, {
      headers: { Accept: 'application/json' },
      signal: AbortSignal.timeout(10_000),
    });
    expect(root.status).toBe(200);

    // A browser without credentials gets the challenge; with none to give, Chromium ends the navigation there.
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const statuses: number[] = [];
      page.on('response', (response) => statuses.push(response.status()));
      await expect(page.goto(`${stack.apiUrl}/dashboard`, { timeout: PAGE_TIMEOUT_MS })).rejects.toThrow(
        /ERR_INVALID_AUTH_CREDENTIALS/,
      );
      expect(statuses).toEqual([401]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
