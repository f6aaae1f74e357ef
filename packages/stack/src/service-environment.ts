/** Where a conductor listens and what it serves: the BMAAS_* settings the stack gives it. */
export interface ConductorPlacement {
  /** Address of its JSON-RPC server, and of its file server unless `fileServerHost` says otherwise. */
  host: string;
  /** Its JSON-RPC port: it registers as `host:rpcPort`. */
  rpcPort: number;
  /** Its [deploy]http_root, served by its own file server at `httpUrl` (both or neither). */
  httpRoot?: string;
  /** [deploy]http_url: its file server at the address machines reach. */
  httpUrl?: string;
  fileServerHost?: string;
  /** Its JSON-RPC certificate and key ([json_rpc]cert_file, key_file), used when [json_rpc]use_ssl is on. */
  certificate?: { certFile: string; keyFile: string };
}

/** The BMAAS_* of a conductor placed as `placement` (every launcher's conductors get these). */
export function conductorEnvironment(placement: ConductorPlacement): Record<string, string> {
  const env: Record<string, string> = {
    BMAAS_DEFAULT__HOST: placement.host,
    BMAAS_JSON_RPC__HOST_IP: placement.host,
    BMAAS_JSON_RPC__PORT: String(placement.rpcPort),
  };
  if (placement.certificate) {
    env.BMAAS_JSON_RPC__CERT_FILE = placement.certificate.certFile;
    env.BMAAS_JSON_RPC__KEY_FILE = placement.certificate.keyFile;
  }
  if (placement.httpRoot !== undefined && placement.httpUrl !== undefined) {
    Object.assign(env, {
      BMAAS_DEPLOY__HTTP_ROOT: placement.httpRoot,
      BMAAS_DEPLOY__HTTP_URL: placement.httpUrl,
      BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
      BMAAS_DEPLOY__HTTP_SERVER_HOST_IP: placement.fileServerHost ?? placement.host,
    });
  }
  return env;
}

/** The BMAAS_* of the API listening on host:port. */
export function apiEnvironment(host: string, port: number): Record<string, string> {
  return { BMAAS_API__HOST_IP: host, BMAAS_API__PORT: String(port) };
}

/** The environment without any BMAAS_* of the caller's: a process of the stack reads only what it is given. */
export function environmentWithoutSettings(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('BMAAS_')));
}
