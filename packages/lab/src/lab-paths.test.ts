import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IMAGE_CACHE_DIR, labPaths } from './lab-paths.js';

describe('lab paths', () => {
  it("keep the lab's state in <state>/lab, from an absolute state directory", () => {
    const paths = labPaths('.state');
    const dir = join(resolve('.state'), 'lab');
    expect(paths).toEqual({
      stateDir: resolve('.state'),
      dir,
      pidFile: join(dir, 'lab.pid'),
      controlSocket: join(dir, 'control.sock'),
      log: join(dir, 'lab.log'),
      nodesFile: join(dir, 'nodes.json'),
      pkiDir: join(dir, 'pki'),
    });
    expect(labPaths('/srv/bmaas/').dir).toBe('/srv/bmaas/lab');
  });

  it('keep the control socket short enough for a Unix socket address (107 bytes) under a usual state path', () => {
    expect(Buffer.byteLength(labPaths('/var/lib/bmaas/state').controlSocket)).toBeLessThan(108);
  });

  it('share the image cache with test/e2e unless BMAAS_E2E_CACHE names another', () => {
    const fromRepo = resolve(import.meta.dirname, '../../../test/e2e/.cache');
    expect(IMAGE_CACHE_DIR).toBe(process.env.BMAAS_E2E_CACHE ?? fromRepo);
  });
});
