export function readPackageList(list: string): string[];
export function ensureDebianPackages(list: string, consequence: string): void;
