import { schemaTypes } from './validation.js';
import { Minor } from './versions.js';

/** What a node create (and a patched node) may hold: the Ironic fields we store. */
const NODE_PROPERTIES = {
  driver: { type: 'string', minLength: 1, maxLength: 255 },
  uuid: schemaTypes.nullableUuid,
  name: schemaTypes.nullableString(255),
  boot_interface: schemaTypes.nullableString(255),
  deploy_interface: schemaTypes.nullableString(255),
  power_interface: schemaTypes.nullableString(255),
  management_interface: schemaTypes.nullableString(255),
  inspect_interface: schemaTypes.nullableString(255),
  driver_info: schemaTypes.nullableObject,
  instance_info: schemaTypes.nullableObject,
  instance_uuid: schemaTypes.nullableUuid,
  properties: schemaTypes.nullableObject,
  extra: schemaTypes.nullableObject,
  conductor_group: schemaTypes.nullableString(255),
  resource_class: schemaTypes.nullableString(80),
  description: schemaTypes.nullableString(4096),
  automated_clean: schemaTypes.nullableBooleanLike,
  maintenance: schemaTypes.nullableBooleanLike,
} as const;

export const NODE_SCHEMA = {
  type: 'object',
  properties: NODE_PROPERTIES,
  required: ['driver'],
  additionalProperties: false,
} as const;

/** Body of POST /v1/nodes (and the node after a PATCH), as validated. */
export interface NodeBody {
  driver: string;
  uuid?: string | null;
  name?: string | null;
  boot_interface?: string | null;
  deploy_interface?: string | null;
  power_interface?: string | null;
  management_interface?: string | null;
  inspect_interface?: string | null;
  driver_info?: Record<string, unknown> | null;
  instance_info?: Record<string, unknown> | null;
  instance_uuid?: string | null;
  properties?: Record<string, unknown> | null;
  extra?: Record<string, unknown> | null;
  conductor_group?: string | null;
  resource_class?: string | null;
  description?: string | null;
  automated_clean?: boolean | string | null;
  maintenance?: boolean | string | null;
}

/** Node fields a PATCH may change (Ironic's list, less what we do not store). */
export const NODE_PATCH_FIELDS = Object.keys(NODE_PROPERTIES)
  .filter((field) => field !== 'uuid')
  .sort();

/** What a removed top-level field becomes. */
export const NODE_FIELD_DEFAULTS: Readonly<Record<string, unknown>> = {
  name: null,
  boot_interface: null,
  deploy_interface: null,
  power_interface: null,
  management_interface: null,
  inspect_interface: null,
  driver_info: {},
  instance_info: {},
  instance_uuid: null,
  properties: {},
  extra: {},
  conductor_group: '',
  resource_class: null,
  description: null,
  automated_clean: null,
  maintenance: false,
};

/** Fields a create or patch may not set before the version that added them. */
export const NODE_WRITE_VERSIONS: Readonly<Record<string, number>> = {
  name: Minor.NODE_NAME,
  resource_class: Minor.RESOURCE_CLASS,
  boot_interface: Minor.DYNAMIC_INTERFACES,
  deploy_interface: Minor.DYNAMIC_INTERFACES,
  power_interface: Minor.DYNAMIC_INTERFACES,
  management_interface: Minor.DYNAMIC_INTERFACES,
  inspect_interface: Minor.DYNAMIC_INTERFACES,
  conductor_group: Minor.CONDUCTOR_GROUP,
  automated_clean: Minor.AUTOMATED_CLEAN,
  description: Minor.DESCRIPTION,
};
