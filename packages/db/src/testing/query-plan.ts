import type { Knex } from 'knex';

/** One node of PostgreSQL's JSON plan. */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
export function flattenPlan(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(flattenPlan)];
}

/** The plan PostgreSQL chooses for `sql`, flattened. */
export async function explainPlan(
  db: Knex,
  sql: string,
  bindings: readonly Knex.RawBinding[] = [],
): Promise<PlanNode[]> {
  const result = await db.raw<{ rows: Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }> }>(
    `explain (format json) ${sql}`,
    bindings as Knex.RawBinding[],
  );
  const [row] = result.rows;
  if (!row) throw new Error('EXPLAIN returned no plan');
  return flattenPlan((row['QUERY PLAN'][0] as { Plan: PlanNode }).Plan);
}
