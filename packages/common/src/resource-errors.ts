/** Domain errors of the resources around nodes (chassis, portgroups, allocations, …), named as Ironic names them. */
import { BmaasError } from './errors.js';

abstract class ResourceMissing extends BmaasError {
  static override readonly status: number = 404;
}
abstract class ConflictError extends BmaasError {
  static override readonly status: number = 409;
}
abstract class ResourceInvalid extends BmaasError {
  static override readonly status: number = 400;
}

export class ChassisNotFound extends ResourceMissing {
  constructor(chassis: string) {
    super(`Chassis ${chassis} could not be found.`, { chassis });
  }
}
export class PortgroupNotFound extends ResourceMissing {
  constructor(portgroup: string) {
    super(`Portgroup ${portgroup} could not be found.`, { portgroup });
  }
}
export class AllocationNotFound extends ResourceMissing {
  constructor(allocation: string, message = `Allocation ${allocation} could not be found.`) {
    super(message, { allocation });
  }
}
export class DeployTemplateNotFound extends ResourceMissing {
  constructor(template: string) {
    super(`Deploy template ${template} could not be found.`, { template });
  }
}
export class RunbookNotFound extends ResourceMissing {
  constructor(runbook: string) {
    super(`Runbook ${runbook} could not be found.`, { runbook });
  }
}
export class InspectionRuleNotFound extends ResourceMissing {
  constructor(rule: string) {
    super(`Inspection rule ${rule} could not be found.`, { rule });
  }
}
export class VolumeConnectorNotFound extends ResourceMissing {
  constructor(connector: string) {
    super(`Volume connector ${connector} could not be found.`, { connector });
  }
}
export class VolumeTargetNotFound extends ResourceMissing {
  constructor(target: string) {
    super(`Volume target ${target} could not be found.`, { target });
  }
}

export class ChassisNotEmpty extends ResourceInvalid {
  constructor(chassis: string) {
    super(`Cannot complete the requested action because chassis ${chassis} contains nodes.`, { chassis });
  }
}
export class PortgroupNotEmpty extends ResourceInvalid {
  constructor(portgroup: string) {
    super(`Cannot complete the requested action because portgroup ${portgroup} contains ports.`, { portgroup });
  }
}

/** A uuid, name or other unique value is already taken; the message says which, as Ironic's does. */
export class ResourceAlreadyExists extends ConflictError {}
/**
 * The request conflicts with the state of what it touches: a node already
 * allocated or associated with an instance, a portgroup without standalone
 * ports (Ironic's Conflict and NodeAssociated).
 */
export class ResourceConflict extends ConflictError {}

/** Every class above with its status and meaning, for docs/errors.md. */
export const RESOURCE_ERRORS: ReadonlyArray<{ code: string; status: number; meaning: string }> = [
  { code: 'ChassisNotEmpty', status: 400, meaning: 'A chassis with nodes cannot be deleted.' },
  { code: 'PortgroupNotEmpty', status: 400, meaning: 'A portgroup with ports cannot be deleted.' },
  { code: 'ChassisNotFound', status: 404, meaning: 'No chassis with that UUID.' },
  { code: 'PortgroupNotFound', status: 404, meaning: 'No portgroup with that UUID or name.' },
  { code: 'AllocationNotFound', status: 404, meaning: 'No allocation with that UUID or name.' },
  { code: 'DeployTemplateNotFound', status: 404, meaning: 'No deploy template with that UUID or name.' },
  { code: 'RunbookNotFound', status: 404, meaning: 'No runbook with that UUID or name.' },
  { code: 'InspectionRuleNotFound', status: 404, meaning: 'No inspection rule with that UUID.' },
  { code: 'VolumeConnectorNotFound', status: 404, meaning: 'No volume connector with that UUID.' },
  { code: 'VolumeTargetNotFound', status: 404, meaning: 'No volume target with that UUID.' },
  {
    code: 'ResourceAlreadyExists',
    status: 409,
    meaning: 'A UUID, name, MAC, connector ID or boot index is already taken; the message names it.',
  },
  {
    code: 'ResourceConflict',
    status: 409,
    meaning: 'The request conflicts with the state of the node or portgroup it touches (already allocated, …).',
  },
];
