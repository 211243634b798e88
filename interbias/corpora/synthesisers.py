"""Debian's classic speech synthesisers as attack families of the same-text CM set.

Four families, each a way of making speech that a countermeasure may or may not have seen:
``diphone`` (concatenated diphones: flite's kal16, festival's kal and ked LPC voices),
``clustergen`` (flite's statistical parametric voices awb, rms, slt), ``hts`` (festival's HMM
voice cmu_us_slt_arctic_hts) and ``formant`` (espeak-ng, a male and a female variant). None is a
voice clone of anyone; each voice's gender is its speaker's (espeak-ng's ``+f3`` variant is a
pitch and formant setting that espeak-ng names female). Every voice runs as a program reading a
text file and writing a WAV file; the outputs are byte-identical from run to run on one machine.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from interbias.utils.errors import CorpusError

#: The attack families, in the order tables show them.
FAMILIES = ("diphone", "clustergen", "hts", "formant")
#: Where festival's voices are installed (``<lang dir>/<voice>/``).
FESTIVAL_VOICES = Path("/usr/share/festival/voices")
#: Seconds one synthesiser call may take before it counts as failed.
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class SynthVoice:
    """One synthetic voice: its name in manifests, family, engine, the engine's own voice id,
    gender, and the Debian packages that provide it."""

    name: str
    family: str
    engine: str
    voice: str
    gender: str
    packages: tuple[str, ...]

    def command(self, text_file: Path, out: Path) -> list[str]:
        """The command line that reads ``text_file`` and writes ``out`` (WAV)."""
        if self.engine == "flite":
            return ["flite", "-voice", self.voice, "-f", str(text_file), "-o", str(out)]
        if self.engine == "festival":
            return ["text2wave", "-eval", f"(voice_{self.voice})", str(text_file), "-o", str(out)]
        return ["espeak-ng", "-v", self.voice, "-f", str(text_file), "-w", str(out)]

    def missing(self) -> str | None:
        """What is missing for this voice to run here (None: it runs)."""
        program = {"flite": "flite", "festival": "text2wave", "espeak-ng": "espeak-ng"}[self.engine]
        if shutil.which(program) is None:
            return f"{program} not found"
        if self.engine == "festival" and not any(FESTIVAL_VOICES.glob(f"*/{self.voice}")):
            return f"festival voice {self.voice} not under {FESTIVAL_VOICES}"
        return None

    def install_hint(self) -> str:
        return "apt-get install " + " ".join(self.packages)


#: The voices of the same-text set, family by family.
VOICES = (
    SynthVoice("flite-kal16", "diphone", "flite", "kal16", "male", ("flite",)),
    SynthVoice("festival-kal-diphone", "diphone", "festival", "kal_diphone", "male", ("festival", "festvox-kallpc16k")),
    SynthVoice("festival-ked-diphone", "diphone", "festival", "ked_diphone", "male", ("festival", "festvox-kdlpc16k")),
    SynthVoice("flite-awb", "clustergen", "flite", "awb", "male", ("flite",)),
    SynthVoice("flite-rms", "clustergen", "flite", "rms", "male", ("flite",)),
    SynthVoice("flite-slt", "clustergen", "flite", "slt", "female", ("flite",)),
    SynthVoice(
        "festival-slt-hts", "hts", "festival", "cmu_us_slt_arctic_hts", "female", ("festival", "festvox-us-slt-hts")
    ),
    SynthVoice("espeak-ng-en-us", "formant", "espeak-ng", "en-us", "male", ("espeak-ng",)),
    SynthVoice("espeak-ng-en-us-f3", "formant", "espeak-ng", "en-us+f3", "female", ("espeak-ng",)),
)  # fmt: skip


def voice_named(name: str) -> SynthVoice:
    """The voice called ``name``; an unknown name lists the valid ones."""
    for v in VOICES:
        if v.name == name:
            return v
    raise CorpusError(f"unknown synthetic voice {name!r}; valid: {', '.join(v.name for v in VOICES)}")


def synthesise(voice: SynthVoice, text: str, out: Path, work: Path) -> str | None:
    """Render ``text`` with ``voice`` into ``out`` (WAV at the voice's own rate); returns None,
    or one line saying why it failed (exit status or signal, timeout, no output). ``work`` holds
    the text file."""
    text_file = work / f"{out.stem}.txt"
    text_file.write_text(text + "\n", encoding="utf-8")
    try:
        done = subprocess.run(
            voice.command(text_file, out), capture_output=True, timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return f"{voice.name}: no output within {TIMEOUT_S:g} s"
    finally:
        text_file.unlink(missing_ok=True)
    if done.returncode != 0:
        return f"{voice.name}: {_exit(done.returncode)}" + _stderr_tail(done.stderr)
    if not out.is_file() or out.stat().st_size <= 44:
        return f"{voice.name}: exit 0 but no audio written"
    return None


def _exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _stderr_tail(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return f" ({lines[-1][:120]})" if lines else ""


def package_versions(packages: list[str]) -> dict[str, str]:
    """Installed version of each Debian package (``""`` where dpkg-query is absent or the
    package is not installed): what a same-text set was rendered with."""
    out = {}
    for p in sorted(set(packages)):
        if shutil.which("dpkg-query") is None:
            out[p] = ""
            continue
        done = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", p], capture_output=True, check=False)
        out[p] = done.stdout.decode().strip() if done.returncode == 0 else ""
    return out
