/**
 * Why the file server at `baseUrl` does not serve `files` yet: the first
 * that fails, as `GET <url>: <status or error code>`; undefined when it
 * serves them all. Start-up waits on this, and says it when it gives up.
 */
export async function whyRootFilesNotServed(baseUrl: string, files: readonly string[]): Promise<string | undefined> {
  for (const file of files) {
    const url = `${baseUrl}/${file}`;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      if (!response.ok) return `GET ${url}: ${response.status}`;
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      return `GET ${url}: ${code ?? (error as Error).message}`;
    }
  }
  return undefined;
}
