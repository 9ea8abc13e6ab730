"""The TLS reverse-proxy configuration of docs/how-to/remote-participants.md, run for real:
nginx (the OS package) with that site block, a self-signed certificate, `uxlab host` behind
it in open-enrolment mode, and a participant in headless Chromium over https and wss who
arrives with a recruitment platform's id, takes the one-trial study to its end and is sent
to the completion link. The store holds a salted hash of the id, never the id; neither
nginx's log nor the host's output holds it."""

from __future__ import annotations

import datetime
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from helpers.browser import WebHost, drive, launch_chromium, wait_screen
from helpers.studies import tiny_study
from playwright.async_api import async_playwright

from uxlab.host.enrolment import enrolled_participant
from uxlab.store import Store
from uxlab.store.enrolment_salt import stored_salt

pytestmark = pytest.mark.slow
DOC = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "remote-participants.md"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def site_block() -> str:
    """The documented nginx site configuration (the page's first ```nginx block)."""
    match = re.search(r"```nginx\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert match, f"{DOC}: no ```nginx block"
    return match.group(1)


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_conf(tmp: Path, tls_port: int, host_port: int) -> Path:
    cert, key = self_signed(tmp)
    site = (
        site_block()
        .replace("listen 443 ssl;", f"listen 127.0.0.1:{tls_port} ssl;")
        .replace("http://127.0.0.1:8350", f"http://127.0.0.1:{host_port}")
        .replace("/etc/ssl/study/fullchain.pem", str(cert))
        .replace("/etc/ssl/study/privkey.pem", str(key))
    )
    assert str(cert) in site and str(host_port) in site, "the documented block changed shape"
    temp = tmp / "nginx-temp"
    temp.mkdir()
    temp.chmod(0o777)
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"""{user}worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log info;
events {{ worker_connections 64; }}
http {{
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
{site}
}}
""",
        encoding="utf-8",
    )
    return conf


async def test_a_participant_takes_part_through_nginx_with_tls(tmp_path):
    assert Path(NGINX).exists(), "nginx is missing: install the OS package `nginx-light`"
    study = tiny_study(
        tmp_path, levels="20", itl=2, repeats=1, practice=0, attention=False, end_question=False
    )
    db = tmp_path / "proxy.sqlite"
    tls_port = free_port()
    done = f"https://localhost:{tls_port}/static/xterm.css?cc=C0MPLETE"
    platform_id = "5f3c0a1b2c3d4e5f6a7b8c9d"
    host = WebHost(study, db, ["--enrol", "PROLIFIC_PID", "--completion-url", done])
    conf = nginx_conf(tmp_path, tls_port, host.port)
    check = subprocess.run([NGINX, "-t", "-c", str(conf)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    nginx = subprocess.Popen([NGINX, "-c", str(conf)], stderr=subprocess.PIPE, text=True)
    try:
        give_up = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", tls_port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < give_up and nginx.poll() is None, "nginx did not start"
                time.sleep(0.1)
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            context = await browser.new_context(ignore_https_errors=True)
            page = await context.new_page()
            await page.goto(f"https://localhost:{tls_port}/?PROLIFIC_PID={platform_id}")
            await wait_screen(page, lambda s: "Press a if you agree" in s)
            final = await drive(page)  # keys through wss and the proxy, to the end
            assert "The study is finished" in final, final
            await page.wait_for_url("**/xterm.css?cc=C0MPLETE", timeout=30_000)
            await browser.close()
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)
        assert host.stop() == 0
    with Store.open(db) as store:
        salt = stored_salt(store)
        assert salt is not None, "the host keeps the salt in the database"
        participant, state = store.db.conn.execute(
            "SELECT participant, state FROM sessions"
        ).fetchone()
    assert (participant, state) == (enrolled_participant(salt, platform_id), "completed")
    assert platform_id.encode() not in db.read_bytes()
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))
    assert platform_id not in logs and platform_id not in host.output()
