import type { Knex } from 'knex';
import { TraitStore } from './trait-store.js';

/** SQL for node_traits: a node's traits, kept sorted by name. */
export class NodeTraitStore extends TraitStore {
  constructor(db: Knex) {
    super(db, 'node_traits', 'node_id');
  }
}
