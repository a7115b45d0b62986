// The kernel VM harness: the command's exit code and its two streams come back apart, --out is
// written back, the modules this machine lacks load there, and a run past its bound is killed.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isQemu, KernelVmTimeoutError, kernelVmMissing, runInKernelVm } from './kernel-vm.js';

describe('kernel VM harness', function () {
  this.timeout(300_000);
  const out = mkdtempSync(join(tmpdir(), 'kvm-test-'));
  after(() => rmSync(out, { recursive: true, force: true }));

  before(function () {
    const missing = kernelVmMissing();
    if (missing === undefined) return;
    if (process.env.PODROUTE_KERNEL_VM === '0') this.skip();
    assert.fail(missing);
  });

  it('runs a command under a kernel with ipip and sctp, returning its code, stdout, stderr and --out files', async () => {
    const script = [
      'modprobe ipip && modprobe sctp',
      'ip link show tunl0 >/dev/null && test -e /proc/net/sctp && echo modules-ok',
      'echo "$GREETING" >&2',
      `echo written > ${out}/file`,
      'touch /etc/kernel-vm-overlay-only',
      'exit 7',
    ].join('; ');
    const r = await runInKernelVm(['sh', '-c', script], { timeoutMs: 240_000, outDir: out, env: { GREETING: 'hello from the vm' } });
    assert.equal(r.code, 7, `exit code; stderr: ${r.stderr}`);
    assert.equal(r.stdout.trim(), 'modules-ok', `stdout: ${r.stdout}; stderr: ${r.stderr}`);
    assert.equal(r.stderr.trim(), 'hello from the vm', 'stderr carries only the command stderr');
    assert.equal(readFileSync(join(out, 'file'), 'utf8'), 'written\n', 'a file under outDir is written back');
    assert.throws(() => readFileSync('/etc/kernel-vm-overlay-only'), 'what is written elsewhere stays in the VM');
  });

  it('kills the VM by its PID when the run passes its bound', async () => {
    const started = Date.now();
    // The bound is kept by the host (a timer from qemu's start), whatever the guest is doing, so
    // a bound shorter than the boot tests the kill as well as a long one and costs less.
    const e = await runInKernelVm(['sleep', '600'], { timeoutMs: 3_000 }).then(
      () => assert.fail('a 600 s sleep returned within a 3 s bound'),
      (e: unknown) => e,
    );
    assert.ok(e instanceof KernelVmTimeoutError, `rejects with KernelVmTimeoutError: ${String(e)}`);
    const ran = Date.now() - started;
    assert.ok(ran >= 3_000 && ran < 60_000, `the run ended ${ran} ms after it started, not before its bound nor long after`);
    assert.ok(e.qemuPid !== undefined, 'the qemu PID was known');
    assert.equal(isQemu(e.qemuPid), false, `qemu ${e.qemuPid} is gone`);
  });
});
