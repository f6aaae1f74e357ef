export * from './agent-client.js';
export * from './agent-errors.js';
export type { AgentTlsVerify } from './agent-http.js';
export * from './agent-options.js';
