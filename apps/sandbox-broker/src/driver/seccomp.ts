/**
 * The seccomp filter every sandbox runs under (bwrap --seccomp): a classic BPF program that
 * refuses, with EPERM, the system calls a tool never needs and a kernel exploit often does
 * (keyrings, bpf, userfaultfd, perf events, io_uring, module and kexec loading, mounts and
 * namespaces, which --cap-drop ALL and --disable-userns already deny but leave reachable as
 * kernel attack surface), and ptrace and process_vm_readv/writev (a tool attaching to the
 * sandbox's own agent), and kills a process that calls through another ABI (32-bit int 0x80,
 * x32), where the numbers differ and would slip past the list. Everything else is allowed, as in
 * Docker's default profile. x86_64 and aarch64 are described (aarch64 numbers from the kernel's
 * generic table, include/uapi/asm-generic/unistd.h; it has no x32, and AArch32 calls carry another
 * arch and are killed); elsewhere sandboxes run without a filter and the broker says so at start.
 */

/** struct seccomp_data: nr at 0, arch at 4. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
/** x32 system calls have this bit set in nr. */
const X32_SYSCALL_BIT = 0x40000000;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const EPERM = 1;
const RET_EPERM = 0x00050000 | EPERM;

/**
 * What the filter refuses, with each call's number on x86_64 and on aarch64 (the kernel's generic
 * table, include/uapi/asm-generic/unistd.h).
 */
export const REFUSED: Readonly<Record<string, { readonly x64: number; readonly arm64: number }>> = {
  acct: { x64: 163, arm64: 89 },
  mount: { x64: 165, arm64: 40 },
  umount2: { x64: 166, arm64: 39 },
  swapon: { x64: 167, arm64: 224 },
  swapoff: { x64: 168, arm64: 225 },
  reboot: { x64: 169, arm64: 142 },
  init_module: { x64: 175, arm64: 105 },
  delete_module: { x64: 176, arm64: 106 },
  quotactl: { x64: 179, arm64: 60 },
  kexec_load: { x64: 246, arm64: 104 },
  add_key: { x64: 248, arm64: 217 },
  request_key: { x64: 249, arm64: 218 },
  keyctl: { x64: 250, arm64: 219 },
  unshare: { x64: 272, arm64: 97 },
  perf_event_open: { x64: 298, arm64: 241 },
  fanotify_init: { x64: 300, arm64: 262 },
  name_to_handle_at: { x64: 303, arm64: 264 },
  open_by_handle_at: { x64: 304, arm64: 265 },
  setns: { x64: 308, arm64: 268 },
  finit_module: { x64: 313, arm64: 273 },
  kexec_file_load: { x64: 320, arm64: 294 },
  bpf: { x64: 321, arm64: 280 },
  userfaultfd: { x64: 323, arm64: 282 },
  io_uring_setup: { x64: 425, arm64: 425 },
  io_uring_enter: { x64: 426, arm64: 426 },
  io_uring_register: { x64: 427, arm64: 427 },
  open_tree: { x64: 428, arm64: 428 },
  move_mount: { x64: 429, arm64: 429 },
  fsopen: { x64: 430, arm64: 430 },
  fsconfig: { x64: 431, arm64: 431 },
  fsmount: { x64: 432, arm64: 432 },
  fspick: { x64: 433, arm64: 433 },
  pivot_root: { x64: 155, arm64: 41 },
  mount_setattr: { x64: 442, arm64: 442 },
  // Another process's memory and registers: a tool could attach to its own sandbox's agent (same
  // uid, same namespaces) and forge the frames it sends the broker, or read what it holds.
  ptrace: { x64: 101, arm64: 117 },
  process_vm_readv: { x64: 310, arm64: 270 },
  process_vm_writev: { x64: 311, arm64: 271 },
};

function instruction(code: number, jt: number, jf: number, k: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt16LE(code, 0);
  b.writeUInt8(jt, 2);
  b.writeUInt8(jf, 3);
  b.writeUInt32LE(k >>> 0, 4);
  return b;
}


/** What the filter needs of an architecture, by Node's name for it (process.arch). */
export const ARCHITECTURES: Readonly<Record<"x64" | "arm64", { readonly audit: number; readonly x32: boolean }>> = {
  x64: { audit: AUDIT_ARCH_X86_64, x32: true },
  arm64: { audit: AUDIT_ARCH_AARCH64, x32: false },
};

/** The numbers of the refused calls on `arch`, in REFUSED's order. */
export function refusedNumbers(arch: keyof typeof ARCHITECTURES): number[] {
  return Object.values(REFUSED).map((call) => call[arch]);
}

/** The filter for this machine's architecture, as bwrap reads it; undefined where none is described. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  if (arch !== "x64" && arch !== "arm64") return undefined;
  const described = ARCHITECTURES[arch];
  const refused = refusedNumbers(arch);
  // Layout: load arch, arch check, load nr, [x32 check,] one jeq per refused call, then ALLOW,
  // EPERM, KILL. Jump offsets count from the next instruction.
  const head = described.x32 ? 4 : 3;
  const n = refused.length;
  const allowAt = head + n;
  const epermAt = allowAt + 1;
  const killAt = epermAt + 1;
  const program = [
    instruction(BPF_LD_W_ABS, 0, 0, OFFSET_ARCH),
    instruction(BPF_JEQ_K, 0, killAt - 2, described.audit),
    instruction(BPF_LD_W_ABS, 0, 0, OFFSET_NR),
    ...(described.x32 ? [instruction(BPF_JGE_K, killAt - 4, 0, X32_SYSCALL_BIT)] : []),
    ...refused.map((nr, i) => instruction(BPF_JEQ_K, epermAt - (head + i) - 1, 0, nr)),
    instruction(BPF_RET_K, 0, 0, RET_ALLOW),
    instruction(BPF_RET_K, 0, 0, RET_EPERM),
    instruction(BPF_RET_K, 0, 0, RET_KILL_PROCESS),
  ];
  return Buffer.concat(program);
}
