"""Run files under the world's faults (probe 112): one flipped bit in a checkpoint's zip headers, a damaged last.pt
beside a damaged best.pt, a run folder that turns read-only as its run fails (the Run still reaches `err.run`)."""
import errno, os, warnings, zipfile

import pytest
from torch import nn

import trainbook as tb
import trainbook.checkpoint
from trainbook.checkpoint import CheckpointError
from trainbook.folder_lock import folder_writer
from helpers import blobs, mlp

CE = nn.functional.cross_entropy


def header_faults(path):
    """One-bit faults at fields of the archive's headers, found from zipfile's own structures (APPNOTE's fixed
    offsets): (offset, bit mask) by what the unpatched reader raised for each (a raw error naming no file)."""
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        first, central = z.infolist()[0], z.start_dir  # the first entry's local header; the central directory's
    assert raw[central:central + 4] == zipfile.stringCentralDir
    end64 = raw.rfind(zipfile.stringEndArchive64)  # torch writes zip64 end records
    locator = raw.rfind(zipfile.stringEndArchive64Locator)
    assert end64 > central and locator > end64
    return {
        "central entry name (UnicodeDecodeError)": (central + 46, 0x80),  # 'a' -> 0xe1: not UTF-8
        "local entry name (UnicodeDecodeError)": (first.header_offset + 30, 0x80),
        "compression method (NotImplementedError)": (central + 10, 0x10),
        "method read as deflate (zlib.error)": (central + 10, 0x08),
        "version needed (NotImplementedError)": (central + 6, 0x40),
        "encrypted flag (RuntimeError)": (central + 8, 0x01),
        "directory offset, one before (OSError EINVAL)": (end64 + 48, 0x01),
        "zip64 locator's disk number (BadZipFile from is_zipfile)": (locator + 4, 0x01),
    }


def test_one_bit_in_a_checkpoints_zip_headers_is_a_checkpoint_error_naming_the_file_and_its_size(tmp_path):
    "Probe 112, f2: these escaped as UnicodeDecodeError, NotImplementedError... naming no file."
    good = tmp_path / "good.pt"
    tb.save_checkpoint(good, model=nn.Linear(8, 2), step=3)
    raw = good.read_bytes()
    for what, (at, bit) in header_faults(good).items():
        bad = bytearray(raw)
        bad[at] ^= bit
        path = tmp_path / "last.pt"
        path.write_bytes(bytes(bad))
        with pytest.raises(CheckpointError) as caught:
            tb.read_checkpoint(path)
        message = str(caught.value)
        assert f"{path} is not a readable checkpoint" in message, what
        assert f"{len(raw)} bytes" in message and "(a disk or copy fault)" in message, (what, message)
    # the same file given to fit(resume=): refused before any step
    X, y = blobs(n=32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CheckpointError, match="headers are damaged"):
            tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=16), loss_fn=CE, live=False, resume=path,
                   config=tb.TrainConfig(epochs=1, device="cpu", checkpoint_dir=str(tmp_path / "new")))


def test_only_a_damaged_archive_is_a_checkpoint_error_not_a_ctrl_c_or_the_disks_read_error(tmp_path, monkeypatch):
    tb.save_checkpoint(tmp_path / "last.pt", model=nn.Linear(8, 2), step=3)
    def pressed(self, n=-1): raise KeyboardInterrupt
    monkeypatch.setattr(zipfile.ZipExtFile, "read", pressed)
    with pytest.raises(KeyboardInterrupt): tb.read_checkpoint(tmp_path / "last.pt")
    def disk(self, n=-1): raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(zipfile.ZipExtFile, "read", disk)
    with pytest.raises(OSError) as caught: tb.read_checkpoint(tmp_path / "last.pt")
    assert caught.value.errno == errno.EIO and not isinstance(caught.value, CheckpointError)


def test_a_damaged_last_pt_points_to_best_pt_only_when_best_pt_reads(tmp_path):
    "Probe 112, f4: the advice named resume='.../best.pt' though best.pt was truncated too."
    model = nn.Linear(8, 2)
    for name in ("last.pt", "best.pt"): tb.save_checkpoint(tmp_path / name, model=model, step=3)
    cut = lambda name: (tmp_path / name).write_bytes((tmp_path / name).read_bytes()[:700])
    cut("last.pt")
    with pytest.raises(CheckpointError, match=f"resume={str(tmp_path / 'best.pt')!r} goes on from there"):
        tb.read_checkpoint(tmp_path)
    cut("best.pt")
    with pytest.raises(CheckpointError) as caught: tb.read_checkpoint(tmp_path)
    message = str(caught.value)
    assert "resume=" not in message and "best.pt is damaged too (it is a zip archive of 700 bytes" in message
    assert "neither checkpoint can go on" in message


def failing_fit(folder, fails_finishing):
    "A run that raises at its first epoch's end; `fails_finishing(run)` makes the ending's own writes fail too."
    real = trainbook.checkpoint.write_run_record
    def write_run_record(run, path):
        if run.stopped == "failed": fails_finishing(path)
        return real(run, path)
    class Fails:
        def after_epoch(self, state): raise RuntimeError("the run's own error")
    X, y = blobs(n=64)
    cfg = tb.TrainConfig(epochs=2, device="cpu", checkpoint_dir=str(folder))
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        patch.setattr(trainbook.checkpoint, "write_run_record", write_run_record)
        with pytest.raises(RuntimeError, match="the run's own error") as err:
            tb.fit(mlp(), tb.TensorLoader(X, y, batch_size=16), loss_fn=CE, config=cfg, live=False,
                   callbacks=[Fails()])
    return err.value, [str(w.message) for w in caught]


def test_a_folder_turned_read_only_as_the_run_fails_still_gives_err_run(tmp_path, monkeypatch):
    """Probe 112, f1: run.json and the lock could not be written or removed; removing the lock raised out of the
    ending, and err.run (05a_run's promise) was never set."""
    real_unlink = os.unlink
    def unlink(path, *, dir_fd=None):  # the folder is read-only now: its lock stays
        if os.path.basename(path) == ".trainbook-run":
            raise OSError(errno.EROFS, "Read-only file system", path)
        return real_unlink(path, dir_fd=dir_fd)
    def read_only(path): raise OSError(errno.EROFS, f"could not write {path}: Read-only file system")
    with monkeypatch.context() as patch:
        patch.setattr(os, "unlink", unlink)
        err, said = failing_fit(tmp_path, read_only)
    assert err.run.stopped == "failed" and err.run.step == 4
    assert any(f"could not write {tmp_path / 'run.json'}" in m for m in said), said
    (lock,) = [m for m in said if "could not be removed" in m]
    assert str(tmp_path) in lock and "Read-only file system" in lock
    assert folder_writer(tmp_path)["pid"] == os.getpid()  # the lock left behind; its advice frees it:
    tb.release_run_dir(tmp_path)
    assert folder_writer(tmp_path) is None


def test_a_failed_run_whose_ending_raises_is_attached_as_it_was_in_memory(tmp_path):
    "Whatever makes the ending raise (here an error end_run does not expect), err.run is the failed Run."
    def refused(path): raise ValueError(f"{path}: refused")
    err, said = failing_fit(tmp_path, refused)
    assert err.run.stopped == "failed" and err.run.step == 4 and tb.last_run() is err.run
    (note,) = [m for m in said if "finishing the failed run raised too" in m]
    assert "run.json: refused" in note and "err.run is the Run as it was in memory" in note
    assert folder_writer(tmp_path) is None  # the folder given back all the same


def test_fit_flax_attaches_its_failed_run_alike(tmp_path):
    "jax_loop's twin of the ending goes through the same function."
    pytest.importorskip("jax")
    optax = pytest.importorskip("optax")
    nnx = pytest.importorskip("flax.nnx")
    import numpy as np
    from trainbook.jax_loop import fit_flax
    rng = np.random.default_rng(0)
    X = rng.normal(size=(32, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int32)
    ce = lambda pred, yb: optax.softmax_cross_entropy_with_integer_labels(pred, yb).mean()
    class Fails:
        def after_epoch(self, state): raise RuntimeError("the run's own error")
    real = trainbook.checkpoint.write_run_record
    def write_run_record(run, path):
        if run.stopped == "failed": raise ValueError(f"{path}: refused")
        return real(run, path)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        patch.setattr(trainbook.checkpoint, "write_run_record", write_run_record)
        with pytest.raises(RuntimeError, match="the run's own error") as err:
            fit_flax(nnx.Linear(4, 2, rngs=nnx.Rngs(0)), None, [(X[:16], y[:16]), (X[16:], y[16:])], None, ce,
                     tb.TrainConfig(epochs=2, checkpoint_dir=str(tmp_path)), callbacks=[Fails()], live=False)
    assert err.value.run.stopped == "failed" and err.value.run.kind == "flax"
    assert any("err.run is the Run as it was in memory" in str(w.message) for w in caught)
