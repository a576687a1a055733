"""The brief result line: what a host model reads first, bounded by what it costs in tokens."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer

from ard_mcp.config import bundled_model_dir
from ard_mcp.search.results import BRIEF_DESCRIPTION, _by_width, _shorten, first_sentence

CHINESE = (
    "一个基于模型上下文协议的服务器工具，专门用于将矢量图像插入到演示文稿中，"
    "它能够保留矢量特性并确保在演示文稿中显示的效果与原图一致，同时支持批量处理和自动排版"
)
ENGLISH = "A server that inserts vector images into presentation slides, keeping them vector, and lays out many slides at once"


def test_a_wide_description_is_cut_to_about_the_tokens_of_a_narrow_one() -> None:
    tokenizer = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    chinese, english = first_sentence(CHINESE), first_sentence(ENGLISH)
    assert chinese.endswith("…") and CHINESE.startswith(chinese[:-1]) and len(chinese) == BRIEF_DESCRIPTION // 4
    assert english.endswith("…") and len(english) == BRIEF_DESCRIPTION
    tokens = [len(tokenizer.encode(text, add_special_tokens=False).ids) for text in (chinese, english)]
    assert tokens[0] <= 1.5 * tokens[1]  # counted one a character, the Chinese line would cost ~4x the English one


def test_mixed_text_counts_each_character_by_its_width() -> None:
    assert first_sentence("ab一个", 6) == "ab…"  # 1 + 1 + 4 + 4 > 6; "ab" and the ellipsis fit
    assert first_sentence("ab一", 6) == "ab一"  # exactly 6: kept whole
    assert first_sentence("Short. Second sentence.") == "Short."


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=200), st.integers(min_value=1, max_value=130))
def test_ascii_text_is_cut_where_counting_each_characters_width_cuts_it(text: str, limit: int) -> None:
    """The ASCII shortcut of a brief line (its length, no width look-ups) cuts exactly where the general count does."""
    assert _shorten(text, limit) == _by_width(" ".join(text.split()), limit)
