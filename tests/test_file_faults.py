"""Run files under the world's faults (probe 112): one flipped bit in a checkpoint's zip headers, a damaged last.pt
beside a damaged best.pt."""
import errno, warnings, zipfile

import pytest
from torch import nn

import trainbook as tb
import trainbook.checkpoint
from trainbook.checkpoint import CheckpointError
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

