import { execFileSync } from 'node:child_process';
import { jsonResponseHeaders } from '@bmaas/conductor';
import { requestParams } from '@bmaas/rpc-client';
import { describe, expect, it } from 'vitest';

/**
 * Objects the boot path builds for every request keep one shape (V8 map)
 * once the code is warm. On node 20's V8 an object literal that starts
 * with a spread and goes on (`{ ...params, context }`) gets a map of its
 * own every time: at thousands of boot requests a second that filled the
 * old generation and brought full collections (docs/performance.md).
 *
 * `build` must not refer to anything outside itself: its source is run in
 * a child node with V8's natives syntax, called 20,000 times, then asked
 * whether two more results share a map.
 */
function sharesOneShape(build: (...args: never[]) => unknown, argsOf: string): boolean {
  const script = `
    const build = (${build.toString()});
    const argsOf = (i) => ${argsOf};
    for (let i = 0; i < 20000; i++) build(...argsOf(i));
    process.stdout.write(String(%HaveSameMap(build(...argsOf(1)), build(...argsOf(2)))));
  `;
  return execFileSync(process.execPath, ['--allow-natives-syntax', '-e', script], { encoding: 'utf8' }) === 'true';
}

describe('objects built per boot request', () => {
  it('the check tells a spread followed by more members apart', () => {
    const spreadThenMore = (params: object, context: object) => ({ ...params, context });
    expect(sharesOneShape(spreadThenMore, `[{ node_id: 'n' + i, name: 'boot.ipxe' }, { request_id: 'r' + i }]`)).toBe(
      false,
    );
  });

  it('the params of a get_boot_config call share one shape', () => {
    expect(sharesOneShape(requestParams, `[{ node_id: 'n' + i, name: 'boot.ipxe' }, { request_id: 'r' + i }]`)).toBe(
      true,
    );
  });

  it("the headers of a conductor's JSON-RPC answer share one shape", () => {
    expect(sharesOneShape(jsonResponseHeaders, `[100 + i, {}]`)).toBe(true);
  });
});
