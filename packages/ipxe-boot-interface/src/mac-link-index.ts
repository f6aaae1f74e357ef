import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isMissing, linkIfChanged, readLinkIfPresent, removeIfPresent, replaceLink } from '@bmaas/http-root';

/**
 * The MAC links of one pxelinux.cfg directory by the node script they point
 * at, so that a node's links are found by reading its own few links instead
 * of every link of every node (a deploy used to read the whole directory:
 * with thousands of nodes per conductor, deploy starts slowed down with
 * every node deployed).
 *
 * The directory is read once, at first use; from then on the index follows
 * the links made and removed through it. It only ever narrows what is read:
 * every link it names is read again (readlink) before it is reported or
 * removed, and callers add the links their node's ports would have, so a
 * link made behind its back for one of those ports is found as well.
 */
export class MacLinkIndex {
  /** link path → target, and target → its link paths. */
  private readonly targetOf = new Map<string, string>();
  private readonly linksByTarget = new Map<string, Set<string>>();
  private loaded: Promise<void> | undefined;

  constructor(private readonly dir: string) {}

  /**
   * Makes `path` a link to `target` (unless it already is one). A link the
   * index knows to point at `target` is read first and left alone when it
   * still does; any other is replaced without reading it (a first deploy's
   * link is not looked for: the result is the same either way).
   */
  async link(target: string, path: string): Promise<void> {
    await this.load();
    if (this.targetOf.get(path) === target) await linkIfChanged(target, path);
    else await replaceLink(target, path);
    this.record(path, target);
  }

  /** Removes the link at `path`; a missing one is fine. */
  async remove(path: string): Promise<void> {
    await this.load();
    await removeIfPresent(path);
    this.record(path, undefined);
  }

  /** The links that point at `target` now: those known, and those of `candidates` that do. */
  async linksTo(target: string, candidates: Iterable<string> = []): Promise<string[]> {
    await this.load();
    const paths = new Set([...(this.linksByTarget.get(target) ?? []), ...candidates]);
    const links: string[] = [];
    for (const path of paths) {
      const actual = await readLinkIfPresent(path);
      this.record(path, actual);
      if (actual === target) links.push(path);
    }
    return links;
  }

  private load(): Promise<void> {
    this.loaded ??= this.scan().catch((error: unknown) => {
      this.loaded = undefined;
      throw error;
    });
    return this.loaded;
  }

  private async scan(): Promise<void> {
    const names = await readdir(this.dir).catch((error: unknown) => {
      if (isMissing(error)) return [];
      throw error;
    });
    for (const name of names) {
      const path = join(this.dir, name);
      this.record(path, await readLinkIfPresent(path));
    }
  }

  private record(path: string, target: string | undefined): void {
    const previous = this.targetOf.get(path);
    if (previous === target) return;
    if (previous !== undefined) {
      const links = this.linksByTarget.get(previous);
      links?.delete(path);
      if (links?.size === 0) this.linksByTarget.delete(previous);
    }
    if (target === undefined) {
      this.targetOf.delete(path);
      return;
    }
    this.targetOf.set(path, target);
    const links = this.linksByTarget.get(target);
    if (links) links.add(path);
    else this.linksByTarget.set(target, new Set([path]));
  }
}
