/** Domain errors of the resources around nodes (chassis, portgroups, allocations, …), named as Ironic names them. */
import { ClientError, Conflict, type DocumentedError, describeError, NotFound } from './errors.js';

export class ChassisNotFound extends NotFound.of('Chassis', 'chassis') {}
export class PortgroupNotFound extends NotFound.of('Portgroup', 'portgroup') {}
export class AllocationNotFound extends NotFound.of('Allocation', 'allocation') {}
export class DeployTemplateNotFound extends NotFound.of('Deploy template', 'template') {}
export class RunbookNotFound extends NotFound.of('Runbook', 'runbook') {}
export class InspectionRuleNotFound extends NotFound.of('Inspection rule', 'rule') {}
export class VolumeConnectorNotFound extends NotFound.of('Volume connector', 'connector') {}
export class VolumeTargetNotFound extends NotFound.of('Volume target', 'target') {}

/** A chassis with nodes or a portgroup with ports is not deleted (Ironic answers 400, not 409). */
export class ChassisNotEmpty extends ClientError {
  constructor(chassis: string) {
    super(`Cannot complete the requested action because chassis ${chassis} contains nodes.`, { chassis });
  }
}
export class PortgroupNotEmpty extends ClientError {
  constructor(portgroup: string) {
    super(`Cannot complete the requested action because portgroup ${portgroup} contains ports.`, { portgroup });
  }
}

/** A uuid, name or other unique value is already taken; the message says which, as Ironic's does. */
export class ResourceAlreadyExists extends Conflict {}
/**
 * The request conflicts with the state of what it touches: a node already
 * allocated or associated with an instance, a portgroup without standalone
 * ports (Ironic's Conflict and NodeAssociated).
 */
export class ResourceConflict extends Conflict {}

/** Every class above with its status and meaning, for docs/errors.md. */
export const RESOURCE_ERRORS: readonly DocumentedError[] = [
  describeError(ChassisNotEmpty, 'A chassis with nodes cannot be deleted.'),
  describeError(PortgroupNotEmpty, 'A portgroup with ports cannot be deleted.'),
  describeError(ChassisNotFound, 'No chassis with that UUID.'),
  describeError(PortgroupNotFound, 'No portgroup with that UUID or name.'),
  describeError(AllocationNotFound, 'No allocation with that UUID or name.'),
  describeError(DeployTemplateNotFound, 'No deploy template with that UUID or name.'),
  describeError(RunbookNotFound, 'No runbook with that UUID or name.'),
  describeError(InspectionRuleNotFound, 'No inspection rule with that UUID.'),
  describeError(VolumeConnectorNotFound, 'No volume connector with that UUID.'),
  describeError(VolumeTargetNotFound, 'No volume target with that UUID.'),
  describeError(
    ResourceAlreadyExists,
    'A UUID, name, MAC, connector ID or boot index is already taken; the message names it.',
  ),
  describeError(
    ResourceConflict,
    'The request conflicts with the state of the node or portgroup it touches (already allocated, …).',
  ),
];
