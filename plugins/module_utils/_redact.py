# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Keys out of engine logs, before anything reads, saves or prints a line of them.

vLLM releases before argument redaction log the API key with the server's arguments:
``non-default args: {..., 'api_key': ['<key>', ...], ...}`` (a list since vLLM 0.10, a
string before), or the whole ``Namespace(..., api_key='<key>', ...)`` in older ones; a
command line echoed into a log carries ``--api-key <key>``, an environment dump
``VLLM_API_KEY=<key>``. :class:`Redactor` replaces the value of every such field, whatever
the key, and every occurrence of the keys it is given, wherever they stand.

Standard library only; target-side code: keep it Python 3.8 compatible.
"""

from __future__ import annotations

import re

MASK = "<redacted>"

# Field names whose value is a secret: the API key under each spelling vLLM and its
# environment use, and the Hugging Face token.
_NAMES = r"(?:vllm[_-])?api[_-]keys?|hf[_-]token|hugging_?face_hub_token"
# A value: a list, a quoted string, or a bare word up to a separator (not one masked yet).
_VALUE = r"(?!'?<redacted>)(?:\[[^\]]*\]|'[^']*'|\"[^\"]*\"|[^\s,)}\]]+)"
_FIELD_RE = re.compile(
    r"""(?P<name>['"]?\b(?:%s)\b['"]?)(?P<sep>\s*[:=]\s*)%s""" % (_NAMES, _VALUE),
    re.IGNORECASE,
)
_FLAG_RE = re.compile(r"(?P<name>--(?:%s))(?P<sep>\s+|=)%s" % (_NAMES, _VALUE), re.IGNORECASE)
_MASK_FIELD = r"\g<name>\g<sep>'%s'" % MASK
_MASK_FLAG = r"\g<name>\g<sep>%s" % MASK


class Redactor(object):
    """Redacts secret fields, and the given ``secrets`` anywhere, from log text."""

    def __init__(self, secrets=()):
        # Longest first, so a key that contains another is masked whole.
        values = sorted({str(s) for s in secrets if s}, key=len, reverse=True)
        self._secrets = values
        self._secrets_re = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def text(self, line):
        """``line`` with every secret masked."""
        if self._secrets_re is not None:
            line = self._secrets_re.sub(MASK, line)
        line = _FLAG_RE.sub(_MASK_FLAG, line)
        return _FIELD_RE.sub(_MASK_FIELD, line)

    def data(self, block):
        """Bytes of whole lines, masked as :meth:`text` does (undecodable bytes kept)."""
        text = block.decode("utf-8", errors="surrogateescape")
        return self.text(text).encode("utf-8", errors="surrogateescape")
