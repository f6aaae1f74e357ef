import type { ConductorRecord, HardwareInterfaceRecord, InterfaceType } from '@bmaas/common';
import type { Knex } from 'knex';
import { rowToRecord } from './case.js';

export interface ConductorRegistration {
  hostname: string;
  conductorGroup: string;
  /** Hardware types this conductor loaded. */
  drivers: string[];
  interfaces: Array<Omit<HardwareInterfaceRecord, 'conductorId'>>;
}

/** An alive conductor as the hash ring needs it. */
export interface AliveConductor {
  id: number;
  hostname: string;
  conductorGroup: string;
  drivers: string[];
}

/** SQL for conductors and the hardware interfaces they register. */
export class ConductorStore {
  constructor(private readonly db: Knex) {}

  /** Upserts the conductor as online with a fresh heartbeat and replaces its interfaces. */
  async register(registration: ConductorRegistration): Promise<ConductorRecord> {
    return this.db.transaction(async (trx) => {
      const [row] = await trx('conductors')
        .insert({
          hostname: registration.hostname,
          conductor_group: registration.conductorGroup,
          drivers: JSON.stringify(registration.drivers),
          online: true,
          updated_at: trx.fn.now(),
        })
        .onConflict('hostname')
        .merge(['conductor_group', 'drivers', 'online', 'updated_at'])
        .returning('*');
      const conductor = rowToRecord<ConductorRecord>(row);
      await trx('conductor_hardware_interfaces').where({ conductor_id: conductor.id }).delete();
      if (registration.interfaces.length > 0) {
        await trx('conductor_hardware_interfaces').insert(
          registration.interfaces.map((i) => ({
            conductor_id: conductor.id,
            hardware_type: i.hardwareType,
            interface_type: i.interfaceType,
            interface_name: i.interfaceName,
            default: i.isDefault,
          })),
        );
      }
      return conductor;
    });
  }

  /** The heartbeat. False when the row is gone (someone unregistered us). */
  async touch(hostname: string): Promise<boolean> {
    const count = await this.db('conductors')
      .where({ hostname })
      .update({ updated_at: this.db.fn.now(), online: true });
    return count === 1;
  }

  async markOffline(hostname: string): Promise<void> {
    await this.db('conductors').where({ hostname }).update({ online: false, updated_at: this.db.fn.now() });
  }

  async get(
    hostname: string,
    heartbeatTimeoutSeconds: number,
  ): Promise<(ConductorRecord & { alive: boolean }) | undefined> {
    const rows = await this.listWithAliveness(heartbeatTimeoutSeconds, hostname);
    return rows[0];
  }

  /** Every conductor, with `alive` computed by the database clock against the timeout. */
  async list(heartbeatTimeoutSeconds: number): Promise<Array<ConductorRecord & { alive: boolean }>> {
    return this.listWithAliveness(heartbeatTimeoutSeconds);
  }

  private async listWithAliveness(
    heartbeatTimeoutSeconds: number,
    hostname?: string,
  ): Promise<Array<ConductorRecord & { alive: boolean }>> {
    const q = this.db('conductors')
      .select(
        '*',
        this.db.raw(`(online and updated_at > now() - make_interval(secs => ?)) as alive`, [heartbeatTimeoutSeconds]),
      )
      .orderBy('hostname');
    if (hostname !== undefined) q.where({ hostname });
    const rows = await q;
    return rows.map((row: Record<string, unknown>) => rowToRecord<ConductorRecord & { alive: boolean }>(row));
  }

  /** Alive conductors (online and heartbeat within the timeout), as the ring needs them. */
  async listAlive(heartbeatTimeoutSeconds: number): Promise<AliveConductor[]> {
    const rows = await this.db('conductors')
      .select('id', 'hostname', 'conductor_group', 'drivers')
      .where('online', true)
      .whereRaw('updated_at > now() - make_interval(secs => ?)', [heartbeatTimeoutSeconds])
      .orderBy('hostname');
    return rows.map((row: Record<string, unknown>) => rowToRecord<AliveConductor>(row));
  }

  /** Ids of the conductors that are not alive (offline, or a heartbeat older than the timeout), as Ironic's get_offline_conductors. */
  async listDeadIds(heartbeatTimeoutSeconds: number): Promise<number[]> {
    const rows = await this.db('conductors')
      .select('id')
      .where('online', false)
      .orWhereRaw('updated_at <= now() - make_interval(secs => ?)', [heartbeatTimeoutSeconds])
      .orderBy('id');
    return rows.map((row: { id: number }) => row.id);
  }

  /** Hardware interfaces registered by alive conductors, for validating node drivers and interfaces. */
  async aliveInterfaces(heartbeatTimeoutSeconds: number): Promise<HardwareInterfaceRecord[]> {
    const rows = await this.db('conductor_hardware_interfaces as i')
      .join('conductors as c', 'c.id', 'i.conductor_id')
      .select('i.conductor_id', 'i.hardware_type', 'i.interface_type', 'i.interface_name', 'i.default as is_default')
      .where('c.online', true)
      .whereRaw('c.updated_at > now() - make_interval(secs => ?)', [heartbeatTimeoutSeconds]);
    return rows.map((row: Record<string, unknown>) => {
      const r = rowToRecord<HardwareInterfaceRecord>(row);
      return { ...r, interfaceType: r.interfaceType as InterfaceType };
    });
  }

  async destroy(hostname: string): Promise<boolean> {
    return (await this.db('conductors').where({ hostname }).delete()) > 0;
  }
}
