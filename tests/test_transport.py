"""Never stuck, never wrong about the network: long waits, proxies, TLS, SOCKS, ports, secrets in
the URL and kept-alive connections a server closes, each over real loopback HTTP."""

import base64
import email.utils
import gzip
import importlib.util
import json
import os
import resource
import signal
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import ROOT, completion, meldungen, messung, openai_nachricht, prompt_tokens, richtig, zeilen

TOT = "http://127.0.0.1:9"  # the discard port: nothing listens there


def bittet_zu_warten(wert, ab=3):
    """A 429 with Retry-After from the ab-th case on, until the test flips `gesund`."""
    zustand = {"gesund": False}

    def antwort(fall, body, nummer):
        if not zustand["gesund"] and fall["id"] not in [f"S1-{i}" for i in range(1, ab)]:
            return 429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": wert}
        return richtig(fall, body, nummer)
    return antwort, zustand


@pytest.mark.parametrize("wert, worte", [
    ("86400", "24 h"),
    (email.utils.formatdate(4102444800, usegmt=True), "days"),  # 2100-01-01
])
def test_eine_lange_wartezeit_haelt_den_lauf_an(cli, endpunkt, tmp_path, wert, worte):
    antwort, zustand = bittet_zu_warten(wert)
    server = endpunkt(antwort)
    start = time.monotonic()
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert time.monotonic() - start < 60  # a guard: the wait asked is a day or more
    assert status == 1
    erste = meldungen(err)[0]
    assert erste.startswith("messen: S1-3: the server answered 429: Rate limit reached; the server asks to wait ")
    assert erste.endswith(", longer than 60 s, so the run stops here")
    assert worte in erste
    assert meldungen(err)[1] == (f"messen: 2 of 42 outputs are saved in {tmp_path / 'ergebnisse' / 't.jsonl'}; "
                                 "the same command again asks for the 40 missing")
    assert server.zahl() == 3  # no retry of a request the server wants a day's rest from
    zustand["gesund"] = True
    status, out, err = cli(*messung(server.url, "--tag", "t"))
    assert status == 0, err
    assert server.zahl() == 3 + 40 and len(zeilen(tmp_path / "ergebnisse" / "t.jsonl")) == 43


def test_ein_unlesbarer_retry_after_wird_nicht_zum_absturz(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall["id"] == "S2-1" and nummer == 1:
            return 429, {"error": {"message": "slow down"}}, {"Retry-After": "soon"}
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url))
    assert (status, meldungen(err)) == (0, ["messen: S2-1: the server answered 429: slow down; asking again (attempt 2 of 4)"])  # a header no one can read asks no wait
    assert server.zahl("S2-1") == 2


# ---------------------------------------------------------------------------
# Proxies: the self-test never uses one; a real run says when one was used
# ---------------------------------------------------------------------------

PROXY_VARIABLEN = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy",
                   "NO_PROXY", "no_proxy")


def ohne_proxy_env():
    return {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLEN}


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_der_selbsttest_geht_an_jedem_proxy_vorbei(variable, tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--selbsttest"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60, env={**ohne_proxy_env(), variable: TOT})
    assert (r.returncode, r.stderr.splitlines()[-1]) == (0, "messen: 42/42 outputs")
    assert "By stage: S1 100 %, S2 100 %, S3 100 %, S4 100 %, S5 100 %." in r.stdout.splitlines()


def test_ein_toter_proxy_wird_genannt(cli, endpunkt, monkeypatch):
    for k in PROXY_VARIABLEN:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HTTP_PROXY", TOT)
    server = endpunkt()
    status, out, err = cli(*messung(server.url, "--versuche", "1"))
    assert status == 1
    assert meldungen(err)[0].startswith("messen: S1-1: no answer from the server after 1 attempt: ")
    assert meldungen(err)[0].endswith(f" (through the proxy {TOT} from the environment; to bypass it, set "
                                      "NO_PROXY=127.0.0.1)")
    assert server.zahl() == 0


def test_ein_socks_proxy(cli, endpunkt, monkeypatch):
    for k in PROXY_VARIABLEN:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:9")
    status, out, err = cli(*messung(endpunkt().url, "--versuche", "1"))
    assert status == 1
    if importlib.util.find_spec("socks") is None:  # requests without its extra: not retried, the fix named
        assert meldungen(err)[0] == ("messen: S1-1: a SOCKS proxy is set for 127.0.0.1, but requests lacks SOCKS "
                                     "support: pip install 'requests[socks]' (or set NO_PROXY to bypass the proxy)")
    else:  # with it: the dead proxy is named
        assert meldungen(err)[0].endswith(" (through the proxy socks5://127.0.0.1:9 from the environment; to bypass "
                                          "it, set NO_PROXY=127.0.0.1)")


def test_tls_die_nicht_gelingt_wird_nicht_wiederholt(cli, endpunkt):
    server = endpunkt()  # plain HTTP: a TLS handshake with it fails as one with an untrusted certificate does
    status, out, err = cli(*messung(server.url.replace("http://", "https://")))
    assert server.verbindungen == 3 + 1  # the pages that identify a server, then the one request: not retried
    assert status == 1
    assert meldungen(err)[0].startswith("messen: S1-1: the TLS connection to the server failed (")
    assert meldungen(err)[0].endswith("); for a self-signed certificate, set REQUESTS_CA_BUNDLE to the file of the "
                                      "CA that signed it")


# a self-signed certificate for 127.0.0.1 (openssl req -x509 -days 36500), made for these tests alone
ZERTIFIKAT = """\
-----BEGIN CERTIFICATE-----
MIIDHDCCAgSgAwIBAgIUYPecYWKkgL4KyrCGpzdC0zp0HiMwDQYJKoZIhvcNAQEL
BQAwFDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTEzMDIxMTQzMFoYDzIxMjYx
MTA2MjExNDMwWjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwggEiMA0GCSqGSIb3DQEB
AQUAA4IBDwAwggEKAoIBAQDMWtk9Rp4OJmWQc/5xLibf0i1LG18YajbFn8k46dsd
CPw5AyRH9RvVUqDEZ5+xA2U1APtsv2z5LueilSEDI+dOan/G5qyufO+rP8OpqzBp
xuy4uKZDqZ8bUEXD+HFJVW442gqjNn3ukdNVbe+BfntPTIloTdkN0o28/BXPBTWM
jcrlcwfjSAdZO/U3strnv8OMr97prLSHxOLmfexszFPi+DzoflbaPy3/B4UVyYQm
OvgwcT+/lsh20R3N7VkQj5k2/tu/sHzdPlQW++ut1sS8RVmnM3ENX5F6NjXVnqoa
nefLNlrjG+J2uDK11OLE16yVnt6E6ZZtGDXcE1sam4h5AgMBAAGjZDBiMB0GA1Ud
DgQWBBRj6pgpgMg0wMACY7ZybdJyPuVm4zAfBgNVHSMEGDAWgBRj6pgpgMg0wMAC
Y7ZybdJyPuVm4zAPBgNVHRMBAf8EBTADAQH/MA8GA1UdEQQIMAaHBH8AAAEwDQYJ
KoZIhvcNAQELBQADggEBAEOlFRRQUseSkPtuRDdgZ6I+w+wrg9uuocTHsdNC5CVT
SxSdiN0TghZ8Z2RyO+kU1Jufs/0kqQqX8kyxL1G2LH1Xxcbpmvy21Sm4z1vlNNDt
X4ut/Nz+tYvIByCAnw3Hv/5gGnIXh9g3qg663Tw+5SlgbFpA0yCq6vcNKkX598mu
bzj3JCPr64rjlumeGecobCjmLpGOmaaIOXX+H3FuYxGOUe0zceuTbuS2T5cEOqr+
UMXVE+QaaV+XzYfZII1xHnpWdgWkUHogOa6MlhXjB+Nz0oDsPIrdCtS9QZ7ip7E8
Kvd7kcXriESRtWXu/6mrlQEMT05Sz0Ojbd62hK8Ftp0=
-----END CERTIFICATE-----
"""
SCHLUESSEL = """\
-----BEGIN PRIVATE KEY-----
MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDMWtk9Rp4OJmWQ
c/5xLibf0i1LG18YajbFn8k46dsdCPw5AyRH9RvVUqDEZ5+xA2U1APtsv2z5Luei
lSEDI+dOan/G5qyufO+rP8OpqzBpxuy4uKZDqZ8bUEXD+HFJVW442gqjNn3ukdNV
be+BfntPTIloTdkN0o28/BXPBTWMjcrlcwfjSAdZO/U3strnv8OMr97prLSHxOLm
fexszFPi+DzoflbaPy3/B4UVyYQmOvgwcT+/lsh20R3N7VkQj5k2/tu/sHzdPlQW
++ut1sS8RVmnM3ENX5F6NjXVnqoanefLNlrjG+J2uDK11OLE16yVnt6E6ZZtGDXc
E1sam4h5AgMBAAECggEAX1unUoog1/5/10PhQAQmvLuxSgJoQhbSHy7cMXQivG5E
cAAwzmkoh0dK4Mtv/6RTdkPSjyDWY4LJMRtAr9vxpCxbGr/qZXPETNdw4LwS19Et
BleXsiw1JAQ1wegtSOiWCe5pF1cmtYwTnyIxKG6ScOMInYTyG5qcbEr/jD5kigSL
/q4bfn/nrfPGmV/oq51QDsplUHyO2/aaRmXN2XrJrLvc2lJm65ftDCWXrIE1Y/T2
tkhyh+YihaJuCPsWz7+/yaysL6KBXcLQba26dgfH65Kvjv6cKP36qWd84dmu7dho
Le5/pG/hI2bS9ZB7MVmkMTZbqU4gV8FpFAI+dUKaxwKBgQD6+hHjFBnRrlYCp1Ev
S5mPXuem+2/bbUPLfS/+UzAJrl1JysV7NTi8bFGej97ZbRrA0gsePpRI9gQ+lhf6
1yHbFA0Kn1nkOv/yJxnrsyRf5tIGWA33ZC7H7JZ8/yriU14IwCajjI5yU7/cP0rd
DyuotsxEWyTAUSGqZr45uFuN0wKBgQDQcebafoN0eQYUVws1lxW6ZUUo+geHoLBP
iQNs6k3uXtU1Go5CfvE3tRoYafVQ1lzwSsWJncRm75q6UKG5dkcK/fHdNioLnMex
E8XBNwmnhNx8Zrjb+E3vIccyloSEGRLtQBHZpK8I4qsAs8uD83f1kMH+u1xCbX/Y
JXt7lhVFAwKBgQC+ekpXCGtsCx82Flx0Q7FA8atovQ2xAGVirBlfsS0VO+OLXLyy
fLsZri/n4pMkezzBuOg9RQtvsF+aTHnYo6wLRFV9iWFE6U5VLz3p9+UUb+9YZz36
U2t5ymKQbWzTpqgIhiUNHWEC/fLwKo0b5yagflPbUT08RJcDZ8TZs8SwhwKBgQCF
bzSpz+0UxVh38tSxJJt7K9LfDVd+ogXblEkGEuN6YWi4ytwggySlVaBz2nh4nBD4
ndTgaIdOobl55Z3xnF6UEcYfpsm5j05h89dW/YWHoEyIsjVKUySInSXoI2SHL4nn
KGmE2qBV3sw68d2pBVVYdKdLCuNffrslQbFPht7swwKBgQDmAyYq3MWKoYoNgs8z
9wrsoQCWJeochvZhREf3u+PFOSxOk367HHZXJifukox0s7LWcMXw2DlUfKmNzCjl
iuAqupTOBkda3zSwLWU4hcof5BLoB3q8aAg74RG44d8ZHwvI7cLibBGUn74S2UL0
6xZFlcOC7Ja5fjQeARp82iFbFg==
-----END PRIVATE KEY-----
"""


def mit_tls(server, tmp_path):
    """The loopback endpoint behind TLS with the certificate above; returns the certificate's file."""
    (tmp_path / "c.pem").write_text(ZERTIFIKAT)
    (tmp_path / "k.pem").write_text(SCHLUESSEL)
    kontext = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    kontext.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    server.server.socket = kontext.wrap_socket(server.server.socket, server_side=True)
    return tmp_path / "c.pem"


def test_requests_ca_bundle_und_netrc_gelten(cli, endpunkt, tmp_path, monkeypatch):
    """The environment is read once per run, and still as requests reads it: the CA bundle, .netrc."""
    for k in PROXY_VARIABLEN:
        monkeypatch.delenv(k, raising=False)
    server = endpunkt()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(mit_tls(server, tmp_path)))
    (tmp_path / "netrc").write_text("machine 127.0.0.1 login ich password geheim\n")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    status, out, err = cli(*messung(server.url.replace("http://", "https://"), "--tag", "t"))
    assert status == 0, err
    assert server.zahl() == 42 and all(h["Authorization"] == "Basic " + base64.b64encode(b"ich:geheim").decode()
                                       for h, _ in server.anfragen)


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1?api_key=GEHEIM", "http://127.0.0.1:80 80/v1?key=GEHEIM"])
def test_ein_ungueltiger_port_und_kein_schluessel_im_text(cli, url):
    status, out, err = cli("--url", url, "--modell", "m")
    assert status == 2 and out == ""
    assert err.startswith("messen: argument --url: ") and err.endswith(": the port is not a number from 0 to 65535\n")
    assert "GEHEIM" not in err


def test_ein_schluessel_in_der_adresse_steht_in_keiner_meldung(cli):
    status, out, err = cli("--url", "http://a..b/v1?api_key=GEHEIM", "--modell", "m", "--versuche", "1")
    assert status == 1 and len(err.splitlines()) == 2
    assert err.startswith("messen: S1-1: the request cannot be sent (")
    assert "GEHEIM" not in err


# ---------------------------------------------------------------------------
# A server that closes a kept-alive connection as the next request goes out
# ---------------------------------------------------------------------------

class SchliesstLeerlauf(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive that answers the first request of each connection and drops the next."""
    protocol_version = "HTTP/1.1"
    zahl = 0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).zahl += 1
        if getattr(self, "schon", False):
            self.close_connection = True  # closed without a word, as an idle timeout does
            return
        self.schon = True
        daten = json.dumps(completion(openai_nachricht([]), usage={"prompt_tokens": prompt_tokens(body),
                                                                   "completion_tokens": 5})).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(daten)))
        self.end_headers()
        self.wfile.write(daten)

    def log_message(self, *_):
        pass


def test_eine_geschlossene_verbindung_kostet_keinen_versuch(cli):
    server = ThreadingHTTPServer(("127.0.0.1", 0), SchliesstLeerlauf)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1/chat/completions"
        status, out, err = cli(*messung(url, "--versuche", "1", "--json"))
    finally:
        server.shutdown()
        server.server_close()
    assert status == 0, err
    assert json.loads(out)["ausgaben"] == 42
    assert SchliesstLeerlauf.zahl == 42 + 41  # each later request found its connection closed once


def test_ein_gescheiterter_selbsttest_nennt_keine_geloeschte_datei(tmp_path):
    """RLIMIT_FSIZE stands for a full disk under the self-test's temporary folder: the one line names the cause,
    not a file already removed, and no command to resume."""
    def begrenzt():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8_000, 8_000))
    r = subprocess.run([sys.executable, str(ROOT / "messen.py"), "--selbsttest"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60, preexec_fn=begrenzt)
    assert r.returncode == 1
    assert meldungen(r.stderr) == ["messen: the self-test failed: cannot write its results (File too large); this "
                                   "installation is broken"]


# ---------------------------------------------------------------------------
# The edges of an answer: trickled headers, an endless body, odd waits, a body no decoder reads
# ---------------------------------------------------------------------------

def tropfende_kopfzeilen(fall, body, nummer):
    """The status line and headers a byte every 50 ms, without end, until the client gives up."""
    def schreibe(handler):
        zeilen_ = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: x\r\n" % i for i in range(10 ** 6))
        for b in zeilen_:
            handler.wfile.write(bytes([b]))
            handler.wfile.flush()
            time.sleep(0.05)
    return schreibe


def test_timeout_begrenzt_auch_die_kopfzeilen(endpunkt, tmp_path):
    server = endpunkt(tropfende_kopfzeilen)
    # without a deadline over the headers this run would never end: the subprocess's timeout fails the test
    r = subprocess.run([sys.executable, str(ROOT / "messen.py"), *messung(server.url, "--timeout", "2",
                                                                         "--versuche", "2"),
                        "--ausgabe", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr.splitlines()[:2]) == (1, [
        "messen: S1-1: Timeout: no complete answer within --timeout 2 s; asking again (attempt 2 of 2)",
        "messen: S1-1: no answer from the server after 2 attempts: Timeout: no complete answer within --timeout 2 s"])
    assert server.zahl() == 2


def endloser_koerper(fall, body, nummer):
    """A chunked body of a megabyte a chunk, without end."""
    def schreibe(handler):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        stueck = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
        while True:
            handler.wfile.write(stueck)
    return schreibe


@pytest.mark.parametrize("antwort, grund", [
    (endloser_koerper, "the answer grew past 64 MB; it was not read further"),
    (lambda fall, body, nummer: lambda handler: handler.wfile.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 68157440\r\n\r\n{"),
     "the server announced 68,157,440 bytes, more than the 64 MB an answer may have"),
], ids=["endlos", "angekuendigt"])
def test_eine_zu_grosse_antwort_ist_ein_benannter_fehler(cli, endpunkt, antwort, grund):
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url, "--versuche", "2"))
    assert (status, err.splitlines()[:2]) == (1, [f"messen: S1-1: {grund}; asking again (attempt 2 of 2)",
                                                  f"messen: S1-1: no answer from the server after 2 attempts: {grund}"])
    assert server.zahl() == 2


def test_retry_after_mit_einer_hochgestellten_ziffer(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall["id"] == "S2-1" and nummer == 1:
            return 429, {"error": {"message": "slow down"}}, {"Retry-After": "\u00b9"}  # "¹": isdigit, not float
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url))
    assert (status, meldungen(err)) == (0, ["messen: S2-1: the server answered 429: slow down; asking again (attempt 2 of 4)"])
    assert server.zahl("S2-1") == 2


def test_ein_413_mit_retry_after_wird_abgewartet(cli, endpunkt):
    def antwort(fall, body, nummer):
        if fall["id"] == "S2-1" and nummer == 1:
            return 413, {"error": {"message": "too many tokens queued"}}, {"Retry-After": "0"}
        return richtig(fall, body, nummer)
    server = endpunkt(antwort)
    status, out, err = cli(*messung(server.url))
    assert (status, meldungen(err)) == (0, ["messen: S2-1: the server answered 413: too many tokens queued; asking "
                                            "again (attempt 2 of 4)"])  # a wait of 0 s: asked again at once
    assert server.zahl("S2-1") == 2
    ohne = endpunkt(lambda fall, body, nummer: (413, {"error": {"message": "request too large"}}, {}))
    status, out, err = cli(*messung(ohne.url, "--tag", "ohne"))
    assert (status, ohne.zahl()) == (1, 1)  # without a wait named, too large stays too large


def test_ein_unlesbarer_gzip_koerper_heisst_nicht_abgeschnitten(cli, endpunkt):
    daten = bytearray(gzip.compress(json.dumps(completion(openai_nachricht([]))).encode()))
    daten[12:20] = b"\xff" * 8  # whole, but its deflate stream broken
    kopf = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"

    def antwort(fall, body, nummer):
        return lambda handler: handler.wfile.write(kopf % len(daten) + bytes(daten))
    status, out, err = cli(*messung(endpunkt(antwort).url, "--versuche", "1"))
    assert status == 1
    assert err.splitlines()[0].startswith("messen: S1-1: no answer from the server after 1 attempt: the body could "
                                          "not be decoded as its Content-Encoding says (")
