import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { sha512Crypt } from './rescue-password.js';

describe('sha512Crypt', () => {
  it.each([
    ['password', 'saltsalt'],
    ['a much longer rescue password with spaces, 64+ characters long, to cross a block', 'abcdefghijklmnop'],
    ['x', 'a'],
  ])('matches openssl passwd -6 for %j', (password, salt) => {
    const expected = execFileSync('openssl', ['passwd', '-6', '-salt', salt, password], { encoding: 'utf8' }).trim();
    expect(sha512Crypt(password, salt)).toBe(expected);
  });

  it('makes a fresh salt each time', () => {
    const first = sha512Crypt('pw');
    expect(first).toMatch(/^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$/);
    expect(sha512Crypt('pw')).not.toBe(first);
  });
});
