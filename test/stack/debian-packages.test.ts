import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readPackageList } from '../../scripts/debian-packages.mjs';

const listed = (path: string) => readPackageList(fileURLToPath(new URL(path, import.meta.url)));

describe('Debian package lists', () => {
  it("npm run lab's packages are all in the tests' list (CI installs that one, and the lab's e2e test runs there)", () => {
    const lab = listed('../../packages/lab/debian-packages.txt');
    const tests = new Set(listed('../debian-packages.txt'));
    expect(lab.length).toBeGreaterThan(5);
    expect(lab.filter((name) => !tests.has(name))).toEqual([]);
  });
});
