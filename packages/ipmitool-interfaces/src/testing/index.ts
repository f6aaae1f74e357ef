export {
  BMC_TEMPERATURE_INITIAL,
  BMC_TEMPERATURE_THRESHOLDS,
  type IpmiSimConfig,
  ipmiSimAvailable,
  ipmiSimBmcEmu,
  ipmiSimLanConf,
  SimulatedBmc,
  type SimulatedBmcOptions,
} from './ipmi-sim.js';
