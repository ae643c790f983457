"""The chat's words (relay_app/words/): every language has every word, with the same fields
and all its plural forms, and a message rendered in Russian has no English word left in it."""

from __future__ import annotations

import re
import string
from dataclasses import fields

import pytest

from relay_app.glitchtip.webhook import read_kept
from relay_app.message.digest import compose
from relay_app.message.formatting import Message, message_for
from relay_app.operating.config import ConfigError, Settings
from relay_app.words import ENGLISH, LANGUAGES, RUSSIAN, Plural, Said, Words, words_for
from relay_app.words.catalogue import in_source, russian_plural, templates
from tests import payloads
from tests.conftest import SOURCES, THEIRS
from tests.telegram_rules import visible_text

# Words allowed to read the same as in English (none yet: even "мин" is not "min").
# Templates of placeholders and signs alone, the same in every language.
SAME_EVERYWHERE: set[str] = {
    "link_card",
    "direct_call",
    "with_hint",
    "report_open_line",
    "source_heading",
}


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def forms(word: str | Plural) -> tuple[str, ...]:
    return word.forms if isinstance(word, Plural) else (word,)


@pytest.mark.parametrize("words", LANGUAGES.values(), ids=LANGUAGES.keys())
def test_every_language_has_every_word_with_the_same_fields(words: Words) -> None:
    english, translated = templates(ENGLISH), templates(words)
    assert translated.keys() == english.keys()
    for name, word in translated.items():
        assert isinstance(word, type(english[name])), name
        assert len(forms(word)) == (words.plural_forms if isinstance(word, Plural) else 1), name
        for form in forms(word):
            assert form.strip(), f"{words.language}.{name} is empty"
            assert placeholders(form) == placeholders(forms(english[name])[0]), name
            form.format(**dict.fromkeys(placeholders(form), "x"))  # a template that renders


def test_a_word_left_in_english_is_caught() -> None:
    untranslated = {
        name
        for name, word in templates(RUSSIAN).items()
        if forms(word) == forms(templates(ENGLISH)[name])
    }
    assert untranslated == SAME_EVERYWHERE
    # And a catalogue cannot leave a word out: the dataclass has no defaults.
    english = {field.name: getattr(ENGLISH, field.name) for field in fields(Words)}
    del english["silence_over"]
    with pytest.raises(TypeError, match="silence_over"):
        Words(**english)


@pytest.mark.parametrize(
    ("n", "said"),
    [
        (1, "1 алерт"),
        (2, "2 алерта"),
        (4, "4 алерта"),
        (5, "5 алертов"),
        (11, "11 алертов"),
        (12, "12 алертов"),
        (14, "14 алертов"),
        (21, "21 алерт"),
        (22, "22 алерта"),
        (25, "25 алертов"),
        (101, "101 алерт"),
        (111, "111 алертов"),
        (0, "0 алертов"),
    ],
)
def test_russian_plurals_follow_the_number(n: int, said: str) -> None:
    assert RUSSIAN.count(RUSSIAN.alerts, n) == said
    assert russian_plural(n) in (0, 1, 2)


def test_english_plurals_and_durations_in_both_languages() -> None:
    assert ENGLISH.count(ENGLISH.alerts, 1) == "1 alert"
    assert ENGLISH.count(ENGLISH.alerts, 21) == "21 alerts"
    assert ENGLISH.duration(192) == "3 min 12 s"
    assert RUSSIAN.duration(192) == "3 мин 12 с"
    assert RUSSIAN.duration(90000) == "1 д 1 ч"


def latin_words(text: str) -> list[str]:
    """Words in Latin letters, but for names: GlitchTip, UTC, short ids, variables' names."""
    allowed = re.compile(r"GlitchTip|UTC|[A-Z][A-Z0-9_]*(?:-[A-Z0-9]+)+|[A-Z]+(?:_[A-Z]+)+")
    return [w for w in re.findall(r"[A-Za-z][\w-]*", text) if not allowed.fullmatch(w)]


RUSSIAN_FIELDS = [
    {"title": "Project", "value": "магазин", "short": True},
    {"title": "Environment", "value": "прод", "short": True},
    {"title": "Server Name", "value": "веб-1", "short": True},
    {"title": "Release", "value": "1.4.2", "short": False},
]


def russian_issue(number: int) -> dict[str, object]:
    return payloads.issue(number, title="Деление на ноль", culprit=None, fields=RUSSIAN_FIELDS)


def in_russian(payload: dict[str, object]) -> Message:
    return message_for(read_kept(payload), RUSSIAN, sources=SOURCES)


def test_an_alert_a_digest_a_backlog_and_an_uptime_pair_in_russian_have_no_english_left() -> None:
    single = in_russian(payloads.issue_alert(russian_issue(1)))
    several = in_russian(payloads.issue_alert(russian_issue(1), russian_issue(2), total=5))
    down = in_russian(payloads.uptime_alert(down=True, name="Витрина"))
    up = in_russian(payloads.uptime_alert(down=False, name="Витрина"))
    digest = compose([single, several, down], [0.0, 5.0, 9.0], RUSSIAN, now=200.0, late_after=60)
    backlog = compose(
        [single] * 120, [float(n) for n in range(120)], RUSSIAN, now=500.0, late_after=60
    )
    assert single.text.startswith("🔴 Алерт GlitchTip\n")
    assert "Проект: магазин" in single.text
    assert several.text.startswith("🔴 Алерт GlitchTip (5 проблем)")
    assert "…и ещё 3 проблемы, которые GlitchTip не приложил" in several.text
    assert down.text == "🔴 НЕ РАБОТАЕТ · Витрина\nСайт перестал отвечать."
    assert up.text == "✅ РАБОТАЕТ · Витрина\nСайт снова отвечает."
    assert digest.text.startswith("🗂 3 алерта, получены с ")
    assert "отправлены через 3 мин 20 с после первого" in digest.text
    assert "×120" in backlog.text
    for message in (single, several, down, up, digest, backlog):
        assert latin_words(message.text) == [], message.text


def test_relay_language_is_checked_with_the_other_variables() -> None:
    base = {
        "TELEGRAM_BOT_TOKEN": "123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghi",
        "TELEGRAM_CHAT_ID": "-1001",
        "RELAY_WEBHOOK_SECRET": "s" * 32,
    }
    assert Settings.from_env(base, THEIRS).language == "en"
    assert Settings.from_env({**base, "RELAY_LANGUAGE": "RU"}, THEIRS).language == "ru"
    with pytest.raises(ConfigError, match=r"RELAY_LANGUAGE: 'de' is not a language .* en or ru"):
        Settings.from_env({**base, "RELAY_LANGUAGE": "de"}, THEIRS)
    assert (
        words_for(Settings.from_env({**base, "RELAY_LANGUAGE": "ru"}, THEIRS).language) is RUSSIAN
    )


def test_the_russian_reads_as_a_russian_team_writes() -> None:
    """A native reader's notes (issue 31): the chat sees a bot, buttons name actions, and no
    verb or adjective has to agree with a person's or a monitor's gender."""
    said = [
        form
        for value in templates(RUSSIAN).values()
        for form in (value.forms if isinstance(value, Plural) else (value,))
    ]
    assert not [text for text in said if re.search(r"[Рр]еле[йяю]", text)]
    assert not [text for text in said if "задержан" in text or "Тишина" in text]
    assert (RUSSIAN.button_resolve, RUSSIAN.button_reopen) == ("✅ Закрыть", "↩️ Открыть снова")
    assert (RUSSIAN.button_mute, RUSSIAN.button_unmute) == ("🔇 Без звука 1 ч", "🔊 Включить звук")
    assert RUSSIAN.ignored_by.format(user="@ivan_dev", time="12:03 MSK") == (
        "🔕 Игнорируется (@ivan_dev, 12:03 MSK)"
    )
    assert RUSSIAN.back_up_after.format(name="Витрина", duration="4 мин") == (
        "✅ Витрина: снова работает, простой 4 мин"
    )
    assert [RUSSIAN.count(RUSSIAN.seen_times, n) for n in (1, 3, 5)] == [
        "событий: 1",
        "событий: 3",
        "событий: 5",
    ]
    assert RUSSIAN.first_seen.format(age="2 мин") == "впервые замечена 2 мин назад"
    assert "Пока звук был выключен, не отправлено 3 алерта" in RUSSIAN.silence_over.format(
        what="проблема BACKEND-4A", start="08:00", end="09:00", alerts="3 алерта"
    )
    # `check --send`'s message: Russian but for the names of the program and its command.
    assert latin_words(visible_text(RUSSIAN.test_message, parse_mode="HTML")) == [
        "relay_app",
        "relay-app",
        "check",
        "send",
    ]


@pytest.mark.parametrize("words", LANGUAGES.values(), ids=LANGUAGES.keys())
def test_words_about_another_source_name_it_and_its_variable(words: Words) -> None:
    sentrys = in_source(words, "Sentry")
    assert in_source(words, "GlitchTip") is words
    assert "GlitchTip" in words.notice_resolved
    assert "GlitchTip" not in sentrys.notice_resolved
    assert "Sentry" in sentrys.notice_resolved
    said = [form for word in templates(sentrys).values() for form in forms(word)]
    assert not [form for form in said if "GlitchTip" in form or "GLITCHTIP" in form]
    assert Said("comment_posted", {"label": "X-1"}, source="Sentry").text(words) == (
        sentrys.comment_posted.format(label="X-1")
    )
    kept = Said("comment_posted", {"label": "X-1"}, source="Sentry")
    assert Said.from_json(kept.as_json()) == kept
