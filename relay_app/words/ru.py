"""The chat's words in Russian (RELAY_LANGUAGE=ru). GlitchTip, UTC, ids and variable names
stay as they are written elsewhere."""

from __future__ import annotations

from .catalogue import Plural, Words, russian_plural

_NEW_TOKEN = (
    "создайте в GlitchTip новый токен (Profile → Auth Tokens) с правом event:write и "  # noqa: S105 (a hint, not a password)
    "укажите его в GLITCHTIP_API_TOKEN"
)

RUSSIAN = Words(
    language="ru",
    plural_forms=3,
    plural_rule=russian_plural,
    unit_day="д",
    unit_hour="ч",
    unit_minute="мин",
    unit_second="с",
    glitchtip_alert="Алерт GlitchTip",
    glitchtip_alert_issues=Plural(
        (
            "Алерт GlitchTip ({n} проблема)",
            "Алерт GlitchTip ({n} проблемы)",
            "Алерт GlitchTip ({n} проблем)",
        )
    ),
    untitled_issue="(проблема без названия)",
    raised_in="в ",
    field_project="Проект",
    field_environment="Окружение",
    field_release="Релиз",
    field_server="Сервер",
    more_issues=Plural(
        (
            "…и ещё {n} проблема, здесь не показана",
            "…и ещё {n} проблемы, здесь не показаны",
            "…и ещё {n} проблем, здесь не показаны",
        )
    ),
    issue_label="Проблема",
    unknown_payload="Вебхук в формате, которого релей не знает",
    monitor_down="НЕДОСТУПЕН",
    monitor_up="ДОСТУПЕН",
    monitor_unknown="МОНИТОРИНГ",
    unnamed_monitor="(монитор без названия)",
    site_down="Сайт перестал отвечать.",
    site_up="Сайт снова доступен.",
    more_monitors=Plural(
        (
            "…и ещё {n} монитор, здесь не показан",
            "…и ещё {n} монитора, здесь не показаны",
            "…и ещё {n} мониторов, здесь не показаны",
        )
    ),
    back_up_after="✅ {name} снова доступен, простой {duration}",
    frame_where="{at}, в функции {function}",
    details_from="ℹ️ {label}, из GlitchTip:",
    level="Уровень: ",
    value="Значение: ",
    seen_times=Plural(("встречалась {n} раз", "встречалась {n} раза", "встречалась {n} раз")),
    new_issue="🆕 Новая проблема, впервые {age} назад",
    first_seen="впервые {age} назад",
    alerts=Plural(("{n} алерт", "{n} алерта", "{n} алертов")),
    digest_head="🗂 {alerts}, получены с {start} по {end} UTC (за {span})",
    digest_sent_after="; отправлено через {delay} после первого",
    cut_note="✂️ Сокращено, чтобы уместиться: каждый номер проблемы ведёт к ней в GlitchTip.",
    more_in_backlog=Plural(
        (
            "➕ Ещё {n} проблема из этих алертов не показана: смотрите GlitchTip",
            "➕ Ещё {n} проблемы из этих алертов не показаны: смотрите GlitchTip",
            "➕ Ещё {n} проблем из этих алертов не показаны: смотрите GlitchTip",
        )
    ),
    late_note="⏳ С опозданием: GlitchTip отправил это в {time} UTC, доставлено через {delay}.",
    repeat_note="↩️ Отправлено повторно: этот алерт, возможно, уже приходил.",
    repeat_note_digest="↩️ Отправлено повторно: некоторые из этих алертов, возможно, уже приходили.",
    button_resolve="✅ Решено",
    button_ignore="🔕 Игнорировать",
    button_reopen="↩️ Открыть снова",
    button_mute="🔇 Тишина 1 ч",
    button_unmute="🔊 Снять тишину",
    resolved_by="✅ Решено — {user}, {time} UTC",
    ignored_by="🔕 Игнорируется — {user}, {time} UTC",
    reopened_by="↩️ Открыта снова — {user}, {time} UTC",
    issue_resolved_by="✅ {label}: решено — {user}, {time} UTC",
    issue_ignored_by="🔕 {label}: игнорируется — {user}, {time} UTC",
    issue_reopened_by="↩️ {label}: открыта снова — {user}, {time} UTC",
    notice_resolved="{label}: решено в GlitchTip",
    notice_ignored="{label}: игнорируется в GlitchTip",
    notice_reopened="{label}: открыта снова в GlitchTip",
    not_updated=" (сообщение обновить не удалось)",
    press_unknown=(
        "Релей не знает эту кнопку: сообщение старше, чем релей хранит кнопки, или его "
        "отправил не этот релей."
    ),
    press_not_allowed=(
        "Вы не можете управлять алертами здесь: вашего id пользователя Telegram нет в списке релея."
    ),
    press_unavailable="Релей сейчас не может прочитать свои записи; ничего не изменено. "
    "Попробуйте ещё раз.",
    press_out_of_date=(
        "Кнопка устарела: проблему изменили после отправки сообщения. Ничего не сделано; "
        "в сообщении видно, что можно сделать сейчас."
    ),
    muted_by="🔇 Тишина в этом чате до {until} UTC — {user}",
    issue_muted_by="🔇 {label}: тишина в этом чате до {until} UTC — {user}",
    notice_muted="{label}: тишина в этом чате до {until} UTC; в GlitchTip ничего не изменено",
    notice_unmuted="{label}: тишина в этом чате снята",
    notice_not_muted="{label}: тишина здесь уже закончилась",
    silence_over=(
        "🔊 Тишина закончилась ({what}, с {start} по {end} UTC): за это время задержано: {alerts}"
    ),
    silence_listed_first="; ниже только первые {count}",
    matcher_issue="проблема {value}",
    matcher_project="проект {value}",
    matcher_environment="окружение {value}",
    matcher_title="заголовок содержит «{value}»",
    comment_author="{author} в Telegram:",
    comment_posted="💬 Добавлено комментарием к {label} в GlitchTip.",
    comment_not_posted="Ваш ответ не добавлен в GlitchTip: {why}",
    reply_which_issue=(
        "Это сообщение о нескольких проблемах: ответьте ещё раз, начав с номера нужной ({labels})."
    ),
    reply_not_kept=(
        "Релей больше не хранит, о чём было это сообщение; оставьте комментарий к проблеме в "
        "GlitchTip."
    ),
    glitchtip_timeout="он не ответил вовремя",
    glitchtip_refused_connection="он отклонил соединение",
    glitchtip_unresolvable="имя хоста из GLITCHTIP_URL не удалось разрешить",
    glitchtip_connection_failed="соединение не удалось",
    glitchtip_unreachable=(
        "GlitchTip недоступен ({why}); ничего не изменено. Попробуйте позже; если не пройдёт, "
        "администратору релея стоит проверить GLITCHTIP_URL."
    ),
    glitchtip_failing="GlitchTip сбоит ({detail}); ничего не изменено. Попробуйте позже.",
    glitchtip_token_refused=(
        f"GlitchTip не принял токен релея (неверный или отозван): {_NEW_TOKEN}."
    ),
    glitchtip_scope_missing=(
        "GlitchTip не разрешает токену релея менять проблемы: нужно право event:write; "
        f"{_NEW_TOKEN}."
    ),
    glitchtip_issue_gone=(
        "В GlitchTip больше нет такой проблемы (удалена или в организации, где нет "
        "пользователя токена); ничего не изменено."
    ),
    glitchtip_redirected=(
        "GLITCHTIP_URL указывает на адрес с перенаправлением (на {where}); ничего не изменено. "
        "Администратор релея должен указать в GLITCHTIP_URL собственный адрес GlitchTip."
    ),
    glitchtip_refused="GlitchTip отклонил изменение ({detail}).",
)
