import os
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.core import hashing
from skill_eval.core.errors import InputError

VECTOR = "8aa16aa94fb3ddec3d5a958c8d19801c413795244266d3a5031d678b35634785"


def make_vector_tree(root: Path) -> Path:
    (root / "nested").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"alpha")
    (root / "nested" / "b.txt").write_bytes(b"beta")
    os.chmod(root / "a.txt", 0o644)
    os.chmod(root / "nested" / "b.txt", 0o644)
    return root


def test_design_test_vector(tmp_path):
    assert hashing.tree_digest(make_vector_tree(tmp_path / "t"), "skill-eval-tree-v1") == VECTOR


def test_cli_digest_prints_vector(tmp_path, capsys):
    root = make_vector_tree(tmp_path / "t")
    assert main(["digest", "--domain", "skill-eval-tree-v1", str(root)]) == 0
    assert capsys.readouterr().out.strip() == VECTOR


def test_git_dir_skipped_and_exec_bit_counts(tmp_path):
    root = make_vector_tree(tmp_path / "t")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("x")
    assert hashing.tree_digest(root) == VECTOR
    os.chmod(root / "a.txt", 0o755)
    assert hashing.tree_digest(root) != VECTOR


def test_domain_separates(tmp_path):
    root = make_vector_tree(tmp_path / "t")
    assert hashing.tree_digest(root, "other") != VECTOR


def test_byte_order_of_paths():
    # 'B' (0x42) sorts before 'a' (0x61) by bytes, and 'a/b' vs 'a.b': '.' (0x2e) < '/' (0x2f)
    e = [hashing.TreeEntry("a/b", "100644", b""), hashing.TreeEntry("a.b", "100644", b""), hashing.TreeEntry("B", "100644", b"")]
    assert hashing.digest_entries("d", e) == hashing.digest_entries("d", list(reversed(e)))


def test_refuses_symlink_file(tmp_path):
    root = make_vector_tree(tmp_path / "t")
    (root / "link").symlink_to(root / "a.txt")
    with pytest.raises(InputError, match="symlink"):
        hashing.tree_digest(root)


def test_refuses_symlink_dir(tmp_path):
    root = make_vector_tree(tmp_path / "t")
    (root / "dlink").symlink_to(root / "nested")
    with pytest.raises(InputError, match="symlink"):
        hashing.tree_digest(root)


def test_refuses_hard_link_alias(tmp_path):
    root = make_vector_tree(tmp_path / "t")
    os.link(root / "a.txt", root / "alias.txt")
    with pytest.raises(InputError, match="hard link"):
        hashing.tree_digest(root)


def test_refuses_fifo(tmp_path):
    root = make_vector_tree(tmp_path / "t")
    os.mkfifo(root / "pipe")
    with pytest.raises(InputError, match="not a regular file"):
        hashing.tree_digest(root)


def test_record_digest_is_canonical():
    a = hashing.record_digest("d", {"b": 1, "a": [1, 2]})
    b = hashing.record_digest("d", {"a": [1, 2], "b": 1})
    assert a == b and a != hashing.record_digest("e", {"a": [1, 2], "b": 1})


def test_cli_symlink_error_is_one_line(tmp_path, capsys):
    root = make_vector_tree(tmp_path / "t")
    (root / "link").symlink_to(root / "a.txt")
    assert main(["digest", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symlink" in err and "Traceback" not in err
