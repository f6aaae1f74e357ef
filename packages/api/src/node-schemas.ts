import { INTERFACE_TYPES } from '@bmaas/common';
import { schemaTypes } from './validation.js';
import { VERSIONED_NODE_FIELDS } from './views/node-view.js';

const interfaceProperties = Object.fromEntries(
  INTERFACE_TYPES.map((kind) => [`${kind}_interface`, schemaTypes.nullableString(255)]),
);

/** Fields only a create may set (Ironic changes them through states/boot_mode and states/secure_boot). */
const CREATE_ONLY_FIELDS = new Set(['uuid', 'boot_mode', 'secure_boot']);
/** Fields only a PATCH may set: protection is for deployed nodes. */
const PATCH_ONLY_FIELDS = new Set(['protected', 'protected_reason']);

/** What a node create (and a patched node) may hold: the Ironic fields we store. */
const NODE_PROPERTIES = {
  driver: { type: 'string', minLength: 1, maxLength: 255 },
  uuid: schemaTypes.nullableString(36),
  name: schemaTypes.nullableString(255),
  ...interfaceProperties,
  driver_info: schemaTypes.nullableObject,
  instance_info: schemaTypes.nullableObject,
  instance_uuid: schemaTypes.nullableString(36),
  instance_name: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
  properties: schemaTypes.nullableObject,
  extra: schemaTypes.nullableObject,
  conductor_group: schemaTypes.nullableString(255),
  resource_class: schemaTypes.nullableString(80),
  description: schemaTypes.nullableString(4096),
  automated_clean: schemaTypes.nullableBooleanLike,
  maintenance: schemaTypes.nullableBooleanLike,
  owner: schemaTypes.nullableString(255),
  lessee: schemaTypes.nullableString(255),
  protected: schemaTypes.nullableBooleanLike,
  protected_reason: schemaTypes.nullableString(65535),
  retired: schemaTypes.nullableBooleanLike,
  retired_reason: schemaTypes.nullableString(65535),
  network_data: schemaTypes.nullableObject,
  disable_power_off: schemaTypes.nullableBooleanLike,
  shard: schemaTypes.nullableString(255),
  parent_node: schemaTypes.nullableString(255),
  boot_mode: { anyOf: [{ type: 'null' }, { type: 'string', enum: ['bios', 'uefi'] }] },
  secure_boot: schemaTypes.nullableBooleanLike,
  chassis_uuid: schemaTypes.nullableUuid,
} as const;

/** A node as a PATCH leaves it: every stored field. */
export const NODE_SCHEMA = {
  type: 'object',
  properties: NODE_PROPERTIES,
  required: ['driver'],
  additionalProperties: false,
} as const;

/** Body of POST /v1/nodes: Ironic's create schema has no protection fields. */
export const NODE_CREATE_SCHEMA = {
  ...NODE_SCHEMA,
  properties: Object.fromEntries(Object.entries(NODE_PROPERTIES).filter(([field]) => !PATCH_ONLY_FIELDS.has(field))),
} as const;

type InterfaceFields = { [K in (typeof INTERFACE_TYPES)[number] as `${K}_interface`]?: string | null };
type BooleanLike = boolean | string | null;

/** Body of POST /v1/nodes (and the node after a PATCH), as validated. */
export interface NodeBody extends InterfaceFields {
  driver: string;
  uuid?: string | null;
  name?: string | null;
  driver_info?: Record<string, unknown> | null;
  instance_info?: Record<string, unknown> | null;
  instance_uuid?: string | null;
  properties?: Record<string, unknown> | null;
  extra?: Record<string, unknown> | null;
  conductor_group?: string | null;
  resource_class?: string | null;
  description?: string | null;
  automated_clean?: BooleanLike;
  maintenance?: BooleanLike;
  owner?: string | null;
  lessee?: string | null;
  protected?: BooleanLike;
  protected_reason?: string | null;
  retired?: BooleanLike;
  retired_reason?: string | null;
  network_data?: Record<string, unknown> | null;
  disable_power_off?: BooleanLike;
  instance_name?: string | null;
  shard?: string | null;
  parent_node?: string | null;
  boot_mode?: 'bios' | 'uefi' | null;
  secure_boot?: BooleanLike;
  chassis_uuid?: string | null;
}

/** Node fields a PATCH may change (Ironic's PATCH_ALLOWED_FIELDS, less chassis_uuid and instance_name). */
export const NODE_PATCH_FIELDS = Object.keys(NODE_PROPERTIES)
  .filter((field) => !CREATE_ONLY_FIELDS.has(field))
  .sort();

/** What a removed top-level field becomes. */
export const NODE_FIELD_DEFAULTS: Readonly<Record<string, unknown>> = {
  name: null,
  ...Object.fromEntries(INTERFACE_TYPES.map((kind) => [`${kind}_interface`, null])),
  driver_info: {},
  instance_info: {},
  instance_uuid: null,
  instance_name: null,
  properties: {},
  extra: {},
  conductor_group: '',
  resource_class: null,
  description: null,
  automated_clean: null,
  maintenance: false,
  owner: null,
  lessee: null,
  protected: false,
  protected_reason: null,
  retired: false,
  retired_reason: null,
  network_data: {},
  disable_power_off: false,
  shard: null,
  parent_node: null,
  chassis_uuid: null,
};

/** Fields a create or patch may not set before the version that added them (the versions their answers use). */
export const NODE_WRITE_VERSIONS: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries(VERSIONED_NODE_FIELDS).filter(([field]) => field in NODE_PROPERTIES),
);
