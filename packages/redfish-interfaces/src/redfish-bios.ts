import { type BiosSetting, InvalidParameterValue, PowerState, RedfishError, waitFor } from '@bmaas/common';
import type { BiosInterface, ProvisionStep, StepOutcome, Task, UserStep } from '@bmaas/driver-api';
import { bmcName } from './driver-info.js';
import { odataId, type RedfishResource } from './redfish-client.js';
import { RedfishInterfaceBase } from './redfish-interface-base.js';
import { objectAt, RedfishNode } from './redfish-node.js';

/** The out-of-band steps, as Ironic's redfish bios interface offers them (on request only). */
const STEPS: readonly ProvisionStep[] = [
  {
    interface: 'bios',
    step: 'apply_configuration',
    priority: 0,
    args: {},
    requires_ramdisk: false,
  },
  { interface: 'bios', step: 'factory_reset', priority: 0, args: {}, requires_ramdisk: false },
];

/** A node's Bios resource and where its pending settings go. */
interface BiosResource {
  path: string;
  body: RedfishResource;
  settingsPath: string;
}

/**
 * Ironic's `redfish` bios interface, on the system's Bios resource: the
 * settings are its Attributes, with the fields of its AttributeRegistry
 * where the service has one (the conductor caches them for
 * /v1/nodes/{id}/bios). apply_configuration PATCHes the pending settings
 * resource (@Redfish.Settings, Bios/Settings) and factory_reset posts
 * Bios.ResetBios; as on real BMCs both take effect at the next boot, so the
 * step reboots the machine, waits ([redfish]bios_apply_timeout) until the
 * Attributes show the settings asked for, and powers it off again if it was
 * off. A setting the BMC did not apply fails the step, naming it.
 */
export class RedfishBiosInterface extends RedfishInterfaceBase implements BiosInterface {
  getOutOfBandSteps(_task: Task): ProvisionStep[] {
    return STEPS.map((step) => ({ ...step }));
  }

  async executeOutOfBandStep(task: Task, step: UserStep): Promise<StepOutcome> {
    if (step.step === 'apply_configuration') await this.applyConfiguration(task, settingsArg(step.args));
    else if (step.step === 'factory_reset') await this.factoryReset(task);
    else throw new InvalidParameterValue(`The redfish bios interface has no step ${step.step}.`);
    return 'done';
  }

  async getSettings(task: Task): Promise<BiosSetting[]> {
    const node = new RedfishNode(this.deps, task.node);
    const bios = await this.bios(node);
    const attributes = objectAt(bios.body, 'Attributes');
    const registry = await this.registry(node, bios.body);
    return Object.entries(attributes).map(([name, value]) => {
      const entry = registry.get(name);
      const values = Array.isArray(entry?.Value)
        ? (entry.Value as RedfishResource[]).map((v) => v.ValueName).filter((v): v is string => typeof v === 'string')
        : null;
      return {
        name,
        value: value === null || value === undefined ? null : String(value),
        attributeType: typeof entry?.Type === 'string' ? entry.Type : null,
        allowableValues: values,
        lowerBound: numberOrNull(entry?.LowerBound),
        upperBound: numberOrNull(entry?.UpperBound),
        minLength: numberOrNull(entry?.MinLength),
        maxLength: numberOrNull(entry?.MaxLength),
        readOnly: booleanOrNull(entry?.ReadOnly),
        resetRequired: booleanOrNull(entry?.ResetRequired),
        unique: booleanOrNull(entry?.IsSystemUniqueProperty),
      };
    });
  }

  private async applyConfiguration(task: Task, settings: Record<string, unknown>): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const bios = await this.bios(node);
    const current = objectAt(bios.body, 'Attributes');
    const unknown = Object.keys(settings).filter((name) => !(name in current));
    if (unknown.length > 0) {
      throw new InvalidParameterValue(
        `BMC ${bmcName(node.target)} has no BIOS setting ${unknown.join(', ')}; it has ${Object.keys(current).join(', ')}.`,
      );
    }
    await node.client.patch(node.target, bios.settingsPath, { Attributes: settings });
    task.logger.info('BIOS settings pending, rebooting to apply them', {
      settings: Object.keys(settings),
      bmc: bmcName(node.target),
    });
    await this.rebootToApply(task, node, bios.path, (attributes) =>
      Object.entries(settings)
        .filter(([name, value]) => String(attributes[name]) !== String(value))
        .map(([n]) => n),
    );
  }

  private async factoryReset(task: Task): Promise<void> {
    const node = new RedfishNode(this.deps, task.node);
    const bios = await this.bios(node);
    const action = objectAt(objectAt(bios.body, 'Actions'), '#Bios.ResetBios');
    const target = typeof action.target === 'string' ? action.target : `${bios.path}/Actions/Bios.ResetBios`;
    await node.client.post(node.target, target, {});
    task.logger.info('BIOS factory reset pending, rebooting to apply it', { bmc: bmcName(node.target) });
    await this.rebootToApply(task, node, bios.path, () => []);
  }

  /**
   * Reboots (powers on a machine that is off), waits until `notApplied`
   * finds nothing left in the Attributes and no pending settings remain, then
   * powers the machine off again when it was off.
   */
  private async rebootToApply(
    task: Task,
    node: RedfishNode,
    biosPath: string,
    notApplied: (attributes: RedfishResource) => string[],
  ): Promise<void> {
    const before = await task.driver.power.getPowerState(task);
    await task.driver.power.setPowerState(task, PowerState.REBOOT);
    let missing: string[] = [];
    try {
      await waitFor(
        'the BIOS settings to be applied',
        async () => {
          const bios = await node.client.get(node.target, biosPath);
          missing = notApplied(objectAt(bios, 'Attributes'));
          return missing.length === 0 ? true : undefined;
        },
        { timeoutMs: this.deps.settings.bios_apply_timeout * 1000, intervalMs: this.deps.pollIntervalMs ?? 2000 },
      );
    } catch (error) {
      if (missing.length === 0) throw error;
      throw new RedfishError(
        `BMC ${bmcName(node.target)} did not apply the BIOS setting(s) ${missing.join(', ')} within ${this.deps.settings.bios_apply_timeout} s of the reboot ([redfish]bios_apply_timeout).`,
      );
    }
    if (before === PowerState.OFF) await task.driver.power.setPowerState(task, PowerState.OFF);
  }

  private async bios(node: RedfishNode): Promise<BiosResource> {
    const { body: system } = await node.system();
    const path = odataId(system.Bios);
    if (!path) throw new RedfishError(`BMC ${bmcName(node.target)} shows no Bios resource for the system.`);
    const body = await node.client.get(node.target, path);
    const settingsPath = odataId(objectAt(body, '@Redfish.Settings').SettingsObject) ?? `${path}/Settings`;
    return { path, body, settingsPath };
  }

  /** The attribute registry's entries by name, or none when the service does not serve it. */
  private async registry(node: RedfishNode, bios: RedfishResource): Promise<Map<string, RedfishResource>> {
    const entries = new Map<string, RedfishResource>();
    const name = bios.AttributeRegistry;
    if (typeof name !== 'string' || name === '') return entries;
    const root = await node.client.get(node.target, node.target.rootPrefix);
    const registriesPath = odataId(root.Registries);
    if (!registriesPath) return entries;
    for (const file of await node.client.members(node.target, registriesPath)) {
      if (file.Id !== name && file.Registry !== name) continue;
      const locations = Array.isArray(file.Location) ? (file.Location as RedfishResource[]) : [];
      const uri = locations.find((l) => typeof l.Uri === 'string')?.Uri as string | undefined;
      if (!uri) continue;
      const registry = await node.client.getOptional(node.target, uri);
      const attributes = objectAt(registry ?? {}, 'RegistryEntries').Attributes;
      for (const entry of Array.isArray(attributes) ? (attributes as RedfishResource[]) : []) {
        if (typeof entry.AttributeName === 'string') entries.set(entry.AttributeName, entry);
      }
    }
    return entries;
  }
}

/** apply_configuration's `settings`: [{name, value}, …] as Ironic takes them. */
function settingsArg(args: Record<string, unknown> | undefined): Record<string, unknown> {
  const settings = args?.settings;
  if (!Array.isArray(settings) || settings.length === 0) {
    throw new InvalidParameterValue('bios.apply_configuration needs args.settings: a list of {"name": …, "value": …}.');
  }
  const out: Record<string, unknown> = {};
  for (const item of settings) {
    const { name, value } = (item ?? {}) as { name?: unknown; value?: unknown };
    if (typeof name !== 'string' || name === '' || value === undefined) {
      throw new InvalidParameterValue(
        `bios.apply_configuration: each setting needs a name and a value, got ${JSON.stringify(item)}.`,
      );
    }
    out[name] = value;
  }
  return out;
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' ? value : null;
}

function booleanOrNull(value: unknown): boolean | null {
  return typeof value === 'boolean' ? value : null;
}
