import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { ensurePrivateDirectory, writePrivateFile } from './private-file.js';

/** bcrypt cost of the generated htpasswd entries. */
const BCRYPT_COST = 10;
export const INSTALL_API_USER = 'admin';
export const INSTALL_JSON_RPC_USER = 'conductor';

/** Where one install's generated credentials live, all under one directory. */
export interface InstallCredentials {
  directory: string;
  /** The REST API user and its password (also in passwordFile). */
  apiUser: string;
  apiPassword: string;
  /** Readable by the owner only: the API password alone, for OS_PASSWORD=$(cat …). */
  passwordFile: string;
  /** An ironic.conf-style file turning on http_basic for the REST API and JSON-RPC with these credentials. */
  configFile: string;
}

const password = (): string => randomBytes(24).toString('base64url');
const htpasswdLine = (user: string, secret: string): string => `${user}:${bcrypt.hashSync(secret, BCRYPT_COST)}\n`;

/**
 * The credentials of one install, made on first use and kept: random passwords
 * for the REST API user and for JSON-RPC between the API and the conductors,
 * their htpasswd files (bcrypt), and a config file that uses them. Files are
 * readable by their owner only; `directory` is created 0700. The config file
 * is written last, so a directory holding it is complete.
 */
export function ensureInstallCredentials(directory: string): InstallCredentials {
  const credentials: InstallCredentials = {
    directory,
    apiUser: INSTALL_API_USER,
    apiPassword: '',
    passwordFile: join(directory, 'api-password'),
    configFile: join(directory, 'credentials.conf'),
  };
  if (existsSync(credentials.configFile) && existsSync(credentials.passwordFile)) {
    return { ...credentials, apiPassword: readFileSync(credentials.passwordFile, 'utf8').trim() };
  }
  ensurePrivateDirectory(directory);
  const apiPassword = password();
  const rpcPassword = password();
  const apiHtpasswd = join(directory, 'api-htpasswd');
  const rpcHtpasswd = join(directory, 'json-rpc-htpasswd');
  writePrivateFile(credentials.passwordFile, `${apiPassword}\n`);
  writePrivateFile(apiHtpasswd, htpasswdLine(INSTALL_API_USER, apiPassword));
  writePrivateFile(rpcHtpasswd, htpasswdLine(INSTALL_JSON_RPC_USER, rpcPassword));
  writePrivateFile(
    credentials.configFile,
    [
      '# Generated once per install: the REST API and JSON-RPC answer authenticated callers only.',
      '[DEFAULT]',
      'auth_strategy = http_basic',
      `http_basic_auth_user_file = ${apiHtpasswd}`,
      '',
      '[json_rpc]',
      'auth_strategy = http_basic',
      `http_basic_auth_user_file = ${rpcHtpasswd}`,
      `username = ${INSTALL_JSON_RPC_USER}`,
      `password = ${rpcPassword}`,
      '',
    ].join('\n'),
  );
  return { ...credentials, apiPassword };
}
