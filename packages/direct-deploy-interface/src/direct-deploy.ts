import { rm } from 'node:fs/promises';
import { AGENT_OPTIONS, AgentClient, type AgentSettings } from '@bmaas/agent-client';
import {
  InvalidParameterValue,
  type JsonObject,
  type Logger,
  MissingParameterValue,
  PowerState,
  ProvisionState as S,
} from '@bmaas/common';
import type {
  CoreSectionValues,
  DeployInterface,
  InstanceImages,
  InterfaceDeps,
  InterfaceDescriptor,
  ProvisionStep,
  RescueSteps,
  StepOutcome,
  Task,
} from '@bmaas/driver-api';
import { agentImagePath, imageForAgent } from './agent-image.js';
import { agentNodeOf, agentPortsOf, flattenAgentSteps, stepName, stepStatus } from './agent-steps.js';
import { configDriveForAgent } from './configdrive.js';
import { DIRECT_DEPLOY_OPTIONS, type DirectDeploySettings } from './deploy-options.js';
import { imageInfoFor, instanceImageOf } from './image-info.js';
import { sha512Crypt } from './rescue-password.js';
import { type AskedImage, checkWrittenImage, InstanceDeployFailure } from './written-image.js';

/** States whose next boot is the deploy ramdisk: a new owner must prepare it again. */
const NEEDS_DEPLOY_RAMDISK: ReadonlySet<string> = new Set([
  S.DEPLOYING,
  S.DEPLOY_WAIT,
  S.CLEANING,
  S.CLEAN_WAIT,
  S.INSPECTING,
  S.INSPECT_WAIT,
]);
const NEEDS_RESCUE_RAMDISK: ReadonlySet<string> = new Set([S.RESCUING, S.RESCUE_WAIT]);
const NEEDS_INSTANCE: ReadonlySet<string> = new Set([S.ACTIVE, S.ADOPTING]);

/** Ironic's out-of-band deploy steps of `direct`, highest priority first (no network interface here). */
const DEPLOY_STEPS: readonly ProvisionStep[] = [
  { interface: 'deploy', step: 'deploy', priority: 100, args: {} },
  { interface: 'deploy', step: 'write_image', priority: 80, args: {} },
  { interface: 'deploy', step: 'prepare_instance_boot', priority: 60, args: {} },
  { interface: 'deploy', step: 'tear_down_agent', priority: 40, args: {} },
  { interface: 'deploy', step: 'boot_instance', priority: 20, args: {} },
];

/** driver_internal_info keys, as upstream. */
const CACHED_DEPLOY_STEPS = 'agent_cached_deploy_steps';
const HARDWARE_MANAGER_VERSION = 'hardware_manager_version';
const ROOT_UUID = 'root_uuid_or_disk_id';
/** What write_image asked the agent for, checked against the agent's answer. */
const IMAGE_ASKED = 'agent_image_asked';

export interface DirectDeployDeps {
  /** Its options of [agent] (the agent client's), and of [deploy] (its clean step priorities, the core's http_root and http_url). */
  config: { agent: AgentSettings; deploy: DirectDeploySettings };
  logger: Logger;
  agent: AgentClient;
  /** The conductor's instance image cache, for image_download_source local. */
  instanceImages?: InstanceImages | undefined;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Ironic's `direct` deploy with ironic-python-agent: the node network-boots
 * the deploy ramdisk (step `deploy`); once its agent heartbeats, the agent
 * writes the image and the config drive (`write_image`, the agent's own
 * step run through deploy.execute_deploy_step); the conductor then points
 * the next boot at the disk, has the agent power the machine off (then the
 * power interface, if it is still on) and powers it on. Cleaning boots the
 * same ramdisk and runs the agent's clean steps; rescue boots the rescue
 * ramdisk. Every call to the agent goes through the AgentClient.
 */
export class DirectDeployInterface implements DeployInterface, RescueSteps {
  private readonly agent: AgentClient;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: DirectDeployDeps) {
    this.agent = deps.agent;
    this.sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  getProperties(): Record<string, string> {
    return {
      agent_verify_ca:
        'CA bundle path, "true" or "false" for calls to the agent before it sent its own certificate. Optional.',
      image_http_proxy: 'Proxy the agent uses to download http:// images. Optional.',
      image_https_proxy: 'Proxy the agent uses to download https:// images. Optional.',
      image_no_proxy: 'Hosts the agent reaches without a proxy. Optional.',
    };
  }

  /** The image fields of instance_info (image_source URL, checksum, disk format) must be usable. */
  async validate(task: Task): Promise<void> {
    instanceImageOf(task.node, this.deps.config.agent.image_download_source);
  }

  async getDeploySteps(_task: Task): Promise<ProvisionStep[]> {
    return DEPLOY_STEPS.map((step) => ({ ...step, args: {} }));
  }

  async executeDeployStep(task: Task, step: ProvisionStep): Promise<StepOutcome> {
    switch (step.step) {
      case 'deploy':
        return this.bootRamdisk(task);
      case 'write_image':
        return this.writeImage(task);
      case 'prepare_instance_boot':
        return this.prepareInstanceBoot(task);
      case 'tear_down_agent':
        return this.tearDownAgent(task);
      case 'boot_instance':
        await task.driver.power.setPowerState(task, PowerState.ON);
        return 'done';
      default:
        throw new InvalidParameterValue(`Unknown deploy step ${stepName(step)}.`);
    }
  }

  async checkDeployStep(task: Task, step: ProvisionStep): Promise<StepOutcome> {
    if (step.step === 'deploy') return this.agentCameUp(task);
    if (step.step === 'write_image') {
      const last = await this.agent.lastCommand(task.node);
      const outcome = stepStatus(last, 'execute_deploy_step', 'deploy_step', step, 'Deploy');
      if (outcome === 'done') await this.checkWritten(task, last?.command_result?.deploy_result);
      return outcome;
    }
    return 'done';
  }

  async tearDown(task: Task): Promise<void> {
    await rm(agentImagePath(task, this.deps.config.deploy), { force: true });
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpInstance(task);
  }

  async prepareCleaning(task: Task): Promise<StepOutcome> {
    await task.driver.boot.prepareRamdisk(task, 'deploy');
    await this.networkBoot(task);
    return 'wait';
  }

  /**
   * The agent's clean steps. Automated: those with a priority above 0 after
   * [deploy]erase_devices_priority / erase_devices_metadata_priority, highest
   * first. Manual: the requested ones, each of which the agent must offer.
   */
  async getCleanSteps(task: Task, requested: readonly ProvisionStep[] | undefined): Promise<ProvisionStep[]> {
    const answer = await this.agent.getCleanSteps(task.node, { node: agentNodeOf(task), ports: agentPortsOf(task) });
    await task.updateNode({
      driverInternalInfo: {
        ...task.node.driverInternalInfo,
        [HARDWARE_MANAGER_VERSION]: answer[HARDWARE_MANAGER_VERSION] ?? {},
      },
    });
    const offered = flattenAgentSteps(answer.clean_steps).map((step) => ({ ...step, priority: this.priorityOf(step) }));
    if (requested) {
      return requested.map((wanted) => {
        const found = offered.find((s) => s.interface === wanted.interface && s.step === wanted.step);
        if (!found) throw new InvalidParameterValue(`The agent offers no clean step ${stepName(wanted)}.`);
        return { ...found, args: wanted.args ?? {} };
      });
    }
    return offered.filter((step) => step.priority > 0).sort((a, b) => b.priority - a.priority);
  }

  async executeCleanStep(task: Task, step: ProvisionStep): Promise<StepOutcome> {
    const started = await this.agent.executeCleanStep(
      task.node,
      { ...step },
      {
        node: agentNodeOf(task),
        ports: agentPortsOf(task),
        clean_version: task.node.driverInternalInfo[HARDWARE_MANAGER_VERSION] ?? {},
      },
    );
    if (started.command_status === 'FAILED') stepStatus(started, 'execute_clean_step', 'clean_step', step, 'Clean');
    return 'wait';
  }

  async checkCleanStep(task: Task, step: ProvisionStep): Promise<StepOutcome> {
    const last = await this.agent.lastCommand(task.node);
    return stepStatus(last, 'execute_clean_step', 'clean_step', step, 'Clean');
  }

  async tearDownCleaning(task: Task): Promise<void> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpRamdisk(task);
  }

  async takeOver(task: Task): Promise<void> {
    const state = task.node.provisionState;
    if (NEEDS_DEPLOY_RAMDISK.has(state)) await task.driver.boot.prepareRamdisk(task, 'deploy');
    else if (NEEDS_RESCUE_RAMDISK.has(state)) await task.driver.boot.prepareRamdisk(task, 'rescue');
    else if (NEEDS_INSTANCE.has(state)) await task.driver.boot.prepareInstance(task);
  }

  async rescue(task: Task): Promise<StepOutcome> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.prepareRamdisk(task, 'rescue');
    await this.networkBoot(task);
    return 'wait';
  }

  /**
   * The rescue agent is up: it gets the rescue password as a SHA-512 crypt
   * hash (rescue.finalize_rescue, hashed), sets it and stops serving.
   */
  async finishRescue(task: Task): Promise<void> {
    const password = task.node.instanceInfo.rescue_password;
    if (typeof password !== 'string' || password === '') {
      throw new MissingParameterValue('instance_info.rescue_password is missing: rescue the node again.');
    }
    const result = await this.agent.finalizeRescue(task.node, sha512Crypt(password));
    this.agent.requireSuccess(result, 'rescue.finalize_rescue');
    await task.driver.boot.cleanUpRamdisk(task);
  }

  async unrescue(task: Task): Promise<void> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpRamdisk(task);
    await task.driver.boot.prepareInstance(task);
    await task.driver.management.setBootDevice(task, 'disk', true);
    await task.driver.power.setPowerState(task, PowerState.ON);
  }

  // -- steps --------------------------------------------------------------------------

  /** Step `deploy`: the node boots the deploy ramdisk; wait for its agent. */
  private async bootRamdisk(task: Task): Promise<StepOutcome> {
    await task.driver.boot.prepareRamdisk(task, 'deploy');
    await this.networkBoot(task);
    return 'wait';
  }

  /**
   * The agent heartbeated while the node waits in step `deploy`: its deploy
   * steps are read and cached, and a freshly started agent (nothing run but
   * get_deploy_steps) lets the deployment go on.
   */
  private async agentCameUp(task: Task): Promise<StepOutcome> {
    if (!task.node.driverInternalInfo[CACHED_DEPLOY_STEPS]) {
      const answer = await this.agent.getDeploySteps(task.node, { node: agentNodeOf(task), ports: agentPortsOf(task) });
      await task.updateNode({
        driverInternalInfo: {
          ...task.node.driverInternalInfo,
          [CACHED_DEPLOY_STEPS]: answer.deploy_steps ?? {},
          [HARDWARE_MANAGER_VERSION]: answer[HARDWARE_MANAGER_VERSION] ?? {},
        },
      });
    }
    const last = await this.agent.lastCommand(task.node);
    return last?.command_status === 'RUNNING' ? 'wait' : 'done';
  }

  /** Step `write_image`: the agent's in-band write_image, with image_info and the config drive. */
  private async writeImage(task: Task): Promise<StepOutcome> {
    const offered = flattenAgentSteps(task.node.driverInternalInfo[CACHED_DEPLOY_STEPS]);
    if (!offered.some((s) => s.interface === 'deploy' && s.step === 'write_image')) {
      throw new InvalidParameterValue('The agent offers no deploy.write_image step (get_deploy_steps).');
    }
    const { imageInfo, virtualSize } = await imageForAgent(task, this.deps);
    const configdrive = await configDriveForAgent(task.node.instanceInfo.configdrive, task.node);
    const step: JsonObject = {
      interface: 'deploy',
      step: 'write_image',
      priority: 80,
      args: { image_info: imageInfo, configdrive },
    };
    const asked: AskedImage = { ...askedImageOf(imageInfo), ...(virtualSize !== undefined ? { virtualSize } : {}) };
    await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, [IMAGE_ASKED]: { ...asked } } });
    task.logger.info('asking the agent to write the image', { url: imageInfo.urls, diskFormat: imageInfo.disk_format });
    const started = await this.agent.executeDeployStep(task.node, step, {
      node: agentNodeOf(task),
      ports: agentPortsOf(task),
      deploy_version: task.node.driverInternalInfo[HARDWARE_MANAGER_VERSION] ?? {},
    });
    if (started.command_status === 'FAILED') {
      stepStatus(started, 'execute_deploy_step', 'deploy_step', DEPLOY_STEPS[1] as ProvisionStep, 'Deploy');
    }
    return 'wait';
  }

  /** The agent says write_image succeeded: what it reports must be what it was asked to write. */
  private async checkWritten(task: Task, deployResult: unknown): Promise<void> {
    const { [IMAGE_ASKED]: stored, ...rest } = task.node.driverInternalInfo;
    const asked =
      (stored as AskedImage | undefined) ??
      askedImageOf(imageInfoFor(task.node, { streamRawImages: this.deps.config.agent.stream_raw_images }));
    try {
      checkWrittenImage(deployResult, asked);
    } catch (error) {
      throw new InstanceDeployFailure(`Deploy step deploy.write_image failed: ${(error as Error).message}`);
    }
    task.logger.info('the agent wrote the image asked for', { image: asked.id, result: deployResult });
    await task.updateNode({ driverInternalInfo: rest });
    await rm(agentImagePath(task, this.deps.config.deploy), { force: true });
  }

  /** Step `prepare_instance_boot`: record the root disk, boot from it from now on. */
  private async prepareInstanceBoot(task: Task): Promise<StepOutcome> {
    const partitions = await this.agent.getPartitionUuids(task.node);
    const root = partitions['root uuid'];
    if (typeof root === 'string' && root !== '') {
      await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, [ROOT_UUID]: root } });
    }
    await task.driver.boot.cleanUpRamdisk(task);
    await task.driver.boot.prepareInstance(task);
    await task.driver.management.setBootDevice(task, 'disk', true);
    return 'done';
  }

  /**
   * Step `tear_down_agent`: the agent syncs and powers the machine off; the
   * power state is checked [agent]post_deploy_get_power_state_retries times
   * and a machine still on is powered off through the power interface.
   */
  private async tearDownAgent(task: Task): Promise<StepOutcome> {
    const { post_deploy_get_power_state_retries: retries, post_deploy_get_power_state_retry_interval: interval } =
      this.deps.config.agent;
    try {
      await this.agent.powerOff(task.node);
    } catch (error) {
      task.logger.warn('the agent did not take the power off command', { error: (error as Error).message });
    }
    for (let attempt = 0; attempt <= retries; attempt++) {
      if ((await task.driver.power.getPowerState(task)) === PowerState.OFF) {
        task.logger.info('the agent powered the machine off', { checks: attempt + 1 });
        await task.updateNode({ powerState: PowerState.OFF });
        return 'done';
      }
      if (attempt < retries) await this.sleep(interval * 1000);
    }
    task.logger.warn('the machine is still on after the agent power off: powering it off');
    await task.driver.power.setPowerState(task, PowerState.OFF);
    return 'done';
  }

  /**
   * Next boot from the network (or from what the boot interface set, when it sets the boot
   * device itself): reboot a running node, power on a stopped one.
   */
  private async networkBoot(task: Task): Promise<void> {
    if (!task.driver.boot.setsBootDevice) await task.driver.management.setBootDevice(task, 'pxe', false);
    const current = await task.driver.power.getPowerState(task);
    await task.driver.power.setPowerState(task, current === PowerState.ON ? PowerState.REBOOT : PowerState.ON);
  }

  private priorityOf(step: ProvisionStep): number {
    const { erase_devices_priority: erase, erase_devices_metadata_priority: metadata } = this.deps.config.deploy;
    if (step.step === 'erase_devices' && erase !== null) return erase;
    if (step.step === 'erase_devices_metadata' && metadata !== null) return metadata;
    return step.priority;
  }
}

function askedImageOf(imageInfo: JsonObject): AskedImage {
  const text = (key: string) => (typeof imageInfo[key] === 'string' ? (imageInfo[key] as string) : undefined);
  const osHashAlgo = text('os_hash_algo');
  const osHashValue = text('os_hash_value');
  const checksum = text('checksum');
  return {
    id: text('id') ?? '',
    diskFormat: text('disk_format') ?? 'raw',
    ...(osHashAlgo && osHashValue ? { osHashAlgo, osHashValue } : {}),
    ...(checksum ? { checksum } : {}),
  };
}

/**
 * The `direct` deploy interface, for the conductor's registry: it declares
 * the agent client's options of [agent] (how it talks to the ramdisk agent)
 * and its clean step priorities in [deploy].
 */
export const directDeployInterface: InterfaceDescriptor<
  DirectDeployInterface,
  typeof AGENT_OPTIONS,
  { deploy: typeof DIRECT_DEPLOY_OPTIONS }
> = {
  name: 'direct',
  config: { section: 'agent', options: AGENT_OPTIONS },
  coreOptions: { deploy: DIRECT_DEPLOY_OPTIONS },
  enabledByDefault: true,
  create: (deps: InterfaceDeps<AgentSettings, CoreSectionValues<{ deploy: typeof DIRECT_DEPLOY_OPTIONS }>>) =>
    new DirectDeployInterface({
      config: {
        agent: deps.settings,
        deploy: { ...deps.coreSettings.deploy, http_root: deps.deploy.http_root, http_url: deps.deploy.http_url },
      },
      logger: deps.logger,
      agent: new AgentClient({ config: deps.settings, logger: deps.logger, observer: deps.agentCommands }),
      instanceImages: deps.instanceImages,
    }),
};
