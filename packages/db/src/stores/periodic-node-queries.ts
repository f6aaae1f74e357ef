import type { Knex } from 'knex';

/** How a periodic task narrows its nodes (listForPeriodicTask); every condition given must hold. */
export interface PeriodicNodeFilter {
  maintenance?: boolean;
  fault?: string;
  /** No lock held on it. */
  unreserved?: boolean;
  /** No power change under way. */
  noTargetPowerState?: boolean;
  provisionStateIn?: readonly string[];
  provisionStateNotIn?: readonly string[];
  /** Prepared by a conductor (conductor_affinity), and not by this one (its id). */
  preparedByOtherThan?: number;
  /**
   * In one of these states for longer than its number of seconds as of `now`,
   * counted from provision_updated_at (else updated_at, else created_at).
   */
  inStateLongerThan?: { seconds: Readonly<Record<string, number>>; now: Date };
}

/** A node as a periodic task lists it: enough to route it to its conductor. */
export interface PeriodicNodeRow {
  id: number;
  uuid: string;
  driver: string;
  conductorGroup: string;
}

/** The conductors' periodic tasks' queries over the nodes (power sync, timeouts, takeover, orphans). */
export class PeriodicNodeQueries {
  constructor(private readonly db: Knex) {}

  /**
   * What a periodic task needs of the nodes of one conductor group and its
   * hardware types that pass `filter`, in id order: enough to route each one
   * (the task then locks it and reads the rest). The filter is applied in
   * SQL and only four columns travel: a conductor among thousands of nodes
   * that need nothing would otherwise read and parse them all, every minute.
   */
  async listForPeriodicTask(
    conductorGroup: string,
    drivers: readonly string[],
    filter: PeriodicNodeFilter = {},
  ): Promise<PeriodicNodeRow[]> {
    const q = this.db('nodes')
      .select('id', 'uuid', 'driver', 'conductor_group as conductorGroup')
      .where('conductor_group', conductorGroup)
      .whereIn('driver', drivers as string[]);
    if (filter.maintenance !== undefined) q.where('maintenance', filter.maintenance);
    if (filter.fault !== undefined) q.where('fault', filter.fault);
    if (filter.unreserved) q.whereNull('reservation');
    if (filter.noTargetPowerState) q.whereNull('target_power_state');
    if (filter.provisionStateIn) q.whereIn('provision_state', filter.provisionStateIn as string[]);
    if (filter.provisionStateNotIn?.length) q.whereNotIn('provision_state', filter.provisionStateNotIn as string[]);
    if (filter.preparedByOtherThan !== undefined) {
      q.whereNotNull('conductor_affinity').whereNot('conductor_affinity', filter.preparedByOtherThan);
    }
    if (filter.inStateLongerThan) {
      const { seconds, now } = filter.inStateLongerThan;
      const limits = Object.entries(seconds);
      if (limits.length === 0) q.whereRaw('false');
      else
        q.where((late) => {
          for (const [state, limit] of limits) {
            const since = new Date(now.getTime() - limit * 1000);
            late.orWhere((one) =>
              one
                .where('provision_state', state)
                .whereRaw('coalesce(provision_updated_at, updated_at, created_at) < ?', [since]),
            );
          }
        });
    }
    return q.orderBy('id');
  }
}
