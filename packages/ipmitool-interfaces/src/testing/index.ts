export {
  IPMI_SIM_BMC_EMU,
  type IpmiSimConfig,
  ipmiSimAvailable,
  ipmiSimLanConf,
  SimulatedBmc,
  type SimulatedBmcOptions,
} from './ipmi-sim.js';
