import type { BootRefusal } from './boot-config-controller.js';
/** One answered boot configuration request, as observers see it (never shown to the requester). */
export interface BootRequestEvent {
  /** `server-error`: the handler failed and answered 500 (a fault of ours, not a refusal). */
  outcome: 'served' | BootRefusal | 'server-error';
  /** The requested name as sent (a name a boot interface serves, or any other); undefined when the path was malformed. */
  name: string | undefined;
  /** The MAC as parsed; undefined when malformed. */
  mac: string | undefined;
  nodeUuid: string | undefined;
  durationSeconds: number;
}
export interface BootRequestObserver {
  observe(event: BootRequestEvent): void;
}
