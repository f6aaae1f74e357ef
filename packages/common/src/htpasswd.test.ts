import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HtpasswdUsers } from './htpasswd.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('HtpasswdUsers', () => {
  it('refuses an unknown user only after a bcrypt round at the cost of the known ones', async () => {
    const users = HtpasswdUsers.parse(`ops:${await bcrypt.hash('pw', 5)}\nadmin:${await bcrypt.hash('pw', 6)}\n`);
    const compare = vi.spyOn(bcrypt, 'compare');
    expect(await users.verify('nobody', 'pw')).toBe(false);
    expect(await users.verify('constructor', 'pw')).toBe(false);
    expect(compare).toHaveBeenCalledTimes(2);
    const dummy = compare.mock.calls[0]?.[1] as string;
    expect(dummy).toMatch(/^\$2b\$06\$/);
    // The same work as a known user with a wrong password: one compare against a hash of that cost.
    compare.mockClear();
    expect(await users.verify('admin', 'wrong')).toBe(false);
    expect(compare).toHaveBeenCalledTimes(1);
    expect(String(compare.mock.calls[0]?.[1]).slice(0, 7)).toBe(dummy.slice(0, 7));
  });

  it('still accepts the right password and refuses the wrong one', async () => {
    const users = HtpasswdUsers.parse(`ops:${await bcrypt.hash('pw', 4)}\n`);
    expect(await users.verify('ops', 'pw')).toBe(true);
    expect(await users.verify('ops', 'pw!')).toBe(false);
    expect(await users.verify('nobody', 'pw')).toBe(false);
  });
});
