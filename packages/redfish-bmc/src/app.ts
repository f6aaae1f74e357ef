// The Redfish service as an express app: the resources of service-resources.ts and
// system-resources.ts, authentication (sessions with X-Auth-Token, or HTTP basic), the
// switched-on faults, and Redfish's error body for every failure.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@bmaas/common';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import {
  attributeRegistry,
  REGISTRIES_PATH,
  registryDocumentPath,
  registryFile,
  registryFileCollection,
} from './bios-registry.js';
import type { FaultSwitches } from './faults.js';
import { isObject, type ManagedSystem } from './managed-system.js';
import { metadataDocument, ROOT } from './odata.js';
import {
  errorBody,
  notFound,
  propertyNotWritable,
  propertyUnknown,
  RedfishError,
  unauthorized,
} from './redfish-error.js';
import {
  chassis,
  chassisCollection,
  FIRMWARE_PATH,
  firmwareCollection,
  firmwareInventory,
  manager,
  managerCollection,
  SESSIONS_PATH,
  serviceRoot,
  session,
  sessionCollection,
  sessionService,
  softwareInventory,
  systemCollection,
  updateService,
  virtualMedia,
  virtualMediaCollection,
} from './service-resources.js';
import type { SessionStore } from './sessions.js';
import * as sys from './system-resources.js';
import { VIRTUAL_CD_ID } from './virtual-media.js';

export interface RedfishAppDeps {
  systems: readonly ManagedSystem[];
  sessions: SessionStore;
  faults: FaultSwitches;
  /** The service root's UUID. */
  uuid: string;
  logger?: Logger;
  /** Called with every request the service answered. */
  onRequest?: (record: { method: string; path: string; status: number }) => void;
}

/** Paths answered without credentials (the Redfish specification's unauthenticated resources). */
const PUBLIC_GETS = new Set(['/redfish', '/redfish/', `${ROOT}`, `${ROOT}/`, `${ROOT}/$metadata`, `${ROOT}/odata`]);

export function createRedfishApp(deps: RedfishAppDeps): Express {
  const { systems, sessions, faults } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use((req, res, next) => {
    res.on('finish', () => deps.onRequest?.({ method: req.method, path: req.path, status: res.statusCode }));
    res.setHeader('OData-Version', '4.0');
    next();
  });
  app.use(async (_req, _res, next) => {
    if (faults.delayMs > 0) await sleep(faults.delayMs);
    const status = faults.takeFailure();
    if (status === 503)
      throw new RedfishError(503, 'ServiceTemporarilyUnavailable', 'The service is temporarily unavailable.');
    if (status !== undefined)
      throw new RedfishError(status, 'InternalError', 'The request failed due to an internal service error.');
    next();
  });
  app.use(express.json({ type: () => true, limit: '1mb' }));
  app.use((req, _res, next) => {
    const isPublic =
      (req.method === 'GET' && PUBLIC_GETS.has(req.path)) || (req.method === 'POST' && req.path === SESSIONS_PATH);
    if (!isPublic) authenticate(req, sessions);
    next();
  });

  const system = (req: Request): ManagedSystem => {
    const found = systems.find((s) => s.id === req.params.systemId);
    if (!found) throw notFound(req.path);
    return found;
  };
  const found = <T>(req: Request, value: T | undefined): T => {
    if (value === undefined) throw notFound(req.path);
    return value;
  };
  const get = (path: string, render: (req: Request) => unknown) =>
    app.get(path, async (req, res) => {
      res.json(await render(req));
    });

  app.get('/redfish', (_req, res) => {
    res.json({ v1: `${ROOT}/` });
  });
  get(ROOT, () => serviceRoot(deps.uuid));
  app.get(`${ROOT}/\\$metadata`, (_req, res) => {
    res.type('application/xml').send(metadataDocument());
  });
  get(`${ROOT}/odata`, () => ({
    '@odata.context': `${ROOT}/$metadata`,
    value: ['Systems', 'Managers', 'Chassis', 'SessionService', 'UpdateService', 'Registries'].map((name) => ({
      name,
      kind: 'Singleton',
      url: `${ROOT}/${name}`,
    })),
  }));

  get(`${ROOT}/SessionService`, () => sessionService(sessions));
  get(SESSIONS_PATH, () => sessionCollection(sessions));
  app.post(SESSIONS_PATH, (req, res) => {
    const body: unknown = req.body;
    const user = isObject(body) ? body.UserName : undefined;
    const password = isObject(body) ? body.Password : undefined;
    if (!sessions.checkCredentials(user, password)) throw unauthorized();
    const created = sessions.create(user as string);
    res
      .status(201)
      .setHeader('X-Auth-Token', created.token)
      .setHeader('Location', `${SESSIONS_PATH}/${created.id}`)
      .json(session(created));
  });
  get(`${SESSIONS_PATH}/:sessionId`, (req) => session(found(req, sessions.get(String(req.params.sessionId)))));
  app.delete(`${SESSIONS_PATH}/:sessionId`, (req, res) => {
    if (!sessions.delete(String(req.params.sessionId))) throw notFound(req.path);
    res.status(204).end();
  });

  get(`${ROOT}/Systems`, () => systemCollection(systems));
  get(`${ROOT}/Systems/:systemId`, (req) => sys.computerSystem(system(req)));
  app.patch(`${ROOT}/Systems/:systemId`, async (req, res) => {
    const target = system(req);
    const body: unknown = req.body;
    if (!isObject(body)) throw new RedfishError(400, 'MalformedJSON', 'The request body must be a JSON object.');
    for (const key of Object.keys(body)) {
      if (key !== 'Boot' && key !== 'IndicatorLED') {
        throw sys.READ_ONLY_SYSTEM_PROPERTIES.has(key) ? propertyNotWritable(key) : propertyUnknown(key);
      }
    }
    // validate everything before changing anything
    const before = { boot: target.bootOverride, led: target.indicatorLed };
    try {
      if ('Boot' in body) target.patchBoot(body.Boot);
      if ('IndicatorLED' in body) target.patchIndicatorLed(body.IndicatorLED);
    } catch (error) {
      target.bootOverride = before.boot;
      target.indicatorLed = before.led;
      throw error;
    }
    res.status(204).end();
  });
  app.post(`${ROOT}/Systems/:systemId/Actions/ComputerSystem.Reset`, async (req, res) => {
    const target = system(req);
    const type: unknown = isObject(req.body) ? req.body.ResetType : undefined;
    if (faults.ignoreResets) {
      deps.logger?.info(`reset ${String(type)} of ${target.id} accepted and ignored (fault switched on)`);
    } else {
      await target.reset(type);
    }
    res.status(204).end();
  });
  get(`${ROOT}/Systems/:systemId/Processors`, (req) => sys.processors(system(req)));
  get(`${ROOT}/Systems/:systemId/Processors/:id`, (req) =>
    found(req, sys.processor(system(req), String(req.params.id))),
  );
  get(`${ROOT}/Systems/:systemId/Memory`, (req) => sys.memoryCollection(system(req)));
  get(`${ROOT}/Systems/:systemId/Memory/:id`, (req) => found(req, sys.memory(system(req), String(req.params.id))));
  get(`${ROOT}/Systems/:systemId/EthernetInterfaces`, (req) => sys.ethernetInterfaces(system(req)));
  get(`${ROOT}/Systems/:systemId/EthernetInterfaces/:id`, (req) =>
    found(req, sys.ethernetInterface(system(req), String(req.params.id))),
  );
  get(`${ROOT}/Systems/:systemId/SimpleStorage`, (req) => sys.simpleStorages(system(req)));
  get(`${ROOT}/Systems/:systemId/SimpleStorage/:id`, (req) =>
    found(req, sys.simpleStorage(system(req), String(req.params.id))),
  );
  get(`${ROOT}/Systems/:systemId/Storage`, (req) => sys.storages(system(req)));
  get(`${ROOT}/Systems/:systemId/Storage/:id`, (req) => found(req, sys.storage(system(req), String(req.params.id))));
  get(`${ROOT}/Systems/:systemId/Storage/:storageId/Drives/:id`, (req) =>
    found(req, sys.drive(system(req), String(req.params.storageId), String(req.params.id))),
  );
  get(`${ROOT}/Systems/:systemId/Bios`, (req) => sys.bios(system(req)));
  get(`${ROOT}/Systems/:systemId/Bios/Settings`, (req) => sys.biosSettings(system(req)));
  app.patch(`${ROOT}/Systems/:systemId/Bios/Settings`, (req, res) => {
    const target = system(req);
    const body: unknown = req.body;
    if (!isObject(body)) throw new RedfishError(400, 'MalformedJSON', 'The request body must be a JSON object.');
    for (const key of Object.keys(body)) {
      if (key !== 'Attributes' && key !== '@Redfish.SettingsApplyTime') throw propertyUnknown(key);
    }
    target.setPendingBios(body.Attributes ?? {});
    res.status(204).end();
  });
  app.post(`${ROOT}/Systems/:systemId/Bios/Actions/Bios.ResetBios`, (req, res) => {
    system(req).resetBiosToDefaults();
    res.status(204).end();
  });
  app.post(`${ROOT}/Systems/:systemId/Bios/Actions/Bios.ChangePassword`, (req, res) => {
    system(req);
    res.status(204).end();
  });

  const byId = (list: readonly ManagedSystem[], req: Request) => {
    const found = list.find((s) => s.id === req.params.id);
    if (!found) throw notFound(req.path);
    return found;
  };
  get(`${ROOT}/Managers`, () => managerCollection(systems));
  get(`${ROOT}/Managers/:id`, (req) => manager(byId(systems, req)));
  get(`${ROOT}/Managers/:id/VirtualMedia`, (req) => virtualMediaCollection(byId(systems, req)));
  const virtualCd = (req: Request) => {
    const owner = byId(systems, req);
    if (req.params.mediaId !== VIRTUAL_CD_ID || !owner.virtualCd) throw notFound(req.path);
    return { owner, cd: owner.virtualCd };
  };
  get(`${ROOT}/Managers/:id/VirtualMedia/:mediaId`, (req) => {
    const { owner, cd } = virtualCd(req);
    return virtualMedia(owner, cd);
  });
  app.post(`${ROOT}/Managers/:id/VirtualMedia/:mediaId/Actions/VirtualMedia.InsertMedia`, async (req, res) => {
    await virtualCd(req).cd.insert(req.body);
    res.status(204).end();
  });
  app.post(`${ROOT}/Managers/:id/VirtualMedia/:mediaId/Actions/VirtualMedia.EjectMedia`, async (req, res) => {
    await virtualCd(req).cd.eject();
    res.status(204).end();
  });
  get(`${ROOT}/Chassis`, () => chassisCollection(systems));
  get(`${ROOT}/Chassis/:id`, (req) => chassis(byId(systems, req)));

  const registryOwner = (req: Request) => {
    const owner = systems.find((s) => s.biosRegistryId === req.params.registryId);
    if (!owner) throw notFound(req.path);
    return owner;
  };
  get(REGISTRIES_PATH, () => registryFileCollection(systems.map((s) => s.biosRegistryId)));
  get(`${REGISTRIES_PATH}/:registryId`, (req) => registryFile(registryOwner(req).biosRegistryId));
  get(`${REGISTRIES_PATH}/:registryId/:file`, (req) => {
    const owner = registryOwner(req);
    if (req.path !== registryDocumentPath(owner.biosRegistryId)) throw notFound(req.path);
    return attributeRegistry(owner.biosRegistryId, owner, owner.biosRules);
  });

  get(`${ROOT}/UpdateService`, () => updateService());
  get(FIRMWARE_PATH, () => firmwareCollection(systems));
  const component = (req: Request) => {
    const id = String(req.params.id);
    return { id, ...found(req, firmwareInventory(systems).get(id)) };
  };
  get(`${FIRMWARE_PATH}/:id`, (req) => {
    const { id, system: owner, component: c } = component(req);
    return softwareInventory(id, owner, c);
  });
  // WriteProtected is the one writable property of SoftwareInventory.
  app.patch(`${FIRMWARE_PATH}/:id`, (req, res) => {
    const { component: c } = component(req);
    const body: unknown = req.body;
    if (!isObject(body)) throw new RedfishError(400, 'MalformedJSON', 'The request body must be a JSON object.');
    for (const [key, value] of Object.entries(body)) {
      if (key !== 'WriteProtected') {
        throw ['Version', 'Updateable', 'SoftwareId', 'Id', 'Name'].includes(key)
          ? propertyNotWritable(key)
          : propertyUnknown(key);
      }
      if (typeof value !== 'boolean')
        throw new RedfishError(400, 'PropertyValueTypeError', `WriteProtected must be a boolean.`);
    }
    if (typeof body.WriteProtected === 'boolean') c.writeProtected = body.WriteProtected;
    res.status(204).end();
  });

  app.use((req) => {
    throw notFound(req.path);
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const redfish = toRedfishError(error);
    if (redfish.status === 401) res.setHeader('WWW-Authenticate', 'Basic realm="Redfish"');
    if (redfish.status === 503) res.setHeader('Retry-After', '1');
    if (redfish.status >= 500 && !(error instanceof RedfishError)) {
      deps.logger?.error(`${req.method} ${req.path}: ${(error as Error).message}`);
    }
    res.status(redfish.status).json(errorBody(redfish));
  });
  return app;
}

/** A live session's X-Auth-Token, or the account's name and password (HTTP basic); else 401. */
function authenticate(req: Request, sessions: SessionStore): void {
  if (!sessions.authorises(req.get('X-Auth-Token'), req.get('Authorization'))) throw unauthorized();
}

function toRedfishError(error: unknown): RedfishError {
  if (error instanceof RedfishError) return error;
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new RedfishError(
      400,
      'MalformedJSON',
      `The request body submitted was malformed JSON: ${(error as Error).message}`,
    );
  }
  return new RedfishError(500, 'InternalError', `The request failed: ${(error as Error).message}`);
}
