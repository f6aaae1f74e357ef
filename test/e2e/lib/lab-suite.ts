// The life cycle every product-lab scenario file shares: the test ramdisk (cached), a fresh
// database, a work directory, the lab itself; stopped and dropped at the end, the logs kept
// when a scenario failed.

import { dirname } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { buildTestRamdisk, IMAGE_CACHE_DIR, type TestRamdisk } from '@bmaas/lab';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { ProductLab } from './product-lab.js';
import { createWorkDir, finishWorkDir } from './work-dir.js';

/** Where built ramdisks and images are kept between runs. */
export const E2E_CACHE_DIR = IMAGE_CACHE_DIR;

/** What a lab starts from: its database, its work directory and where the ramdisk's images are. */
export interface LabBase {
  databaseUrl: string;
  workDir: string;
  imagesDir: string;
}

/** Valid inside the scenarios (after beforeAll). */
export interface LabSuite {
  readonly lab: ProductLab;
  readonly ramdisk: TestRamdisk;
  readonly database: TestDatabase;
}

/** Registers beforeAll/afterEach/afterAll for a describe block running scenarios on one lab. */
export function useProductLab(label: string, start: (base: LabBase) => Promise<ProductLab>): LabSuite {
  let database: TestDatabase | undefined;
  let ramdisk: TestRamdisk | undefined;
  let lab: ProductLab | undefined;
  let workDir: string | undefined;
  let failed = true; // until the set-up is done

  beforeAll(async () => {
    ramdisk = await buildTestRamdisk(E2E_CACHE_DIR);
    database = await createTestDatabase();
    workDir = await createWorkDir();
    lab = await start({ databaseUrl: database.url, workDir, imagesDir: dirname(ramdisk.kernel) });
    failed = false;
  }, 300_000);

  afterEach((context) => {
    if (context.task.result?.state === 'fail') failed = true;
  });

  afterAll(async () => {
    await lab?.stop();
    await database?.drop();
    await finishWorkDir(workDir, failed, label);
  }, 120_000);

  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${label}: the ${what} is not set up`);
    return value;
  };
  return {
    get lab() {
      return ready(lab, 'lab');
    },
    get ramdisk() {
      return ready(ramdisk, 'ramdisk');
    },
    get database() {
      return ready(database, 'database');
    },
  };
}
