"""The chat's words in Russian (RELAY_LANGUAGE=ru), as a Russian-speaking team writes them: the
chat sees a bot («бот»), buttons name actions («Закрыть», «Без звука 1 ч»), and who did what
stands in brackets, so that no verb has to agree with a person's gender («Игнорируется
(@ivan_dev, 12:03 UTC)»), nor a monitor's name with its own («Витрина: снова работает»).
GlitchTip, UTC, ids and variable names stay as they are written elsewhere."""

from __future__ import annotations

from .catalogue import Plural, Words, russian_plural

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
    source_heading="{source} · {heading}",
    untitled_issue="(проблема без названия)",
    raised_in="в ",
    field_project="Проект",
    field_environment="Окружение",
    field_release="Релиз",
    field_server="Сервер",
    more_issues=Plural(
        (
            "…и ещё {n} проблема, которую GlitchTip не приложил: чтобы бот назвал её, "
            "задайте GLITCHTIP_API_TOKEN",
            "…и ещё {n} проблемы, которые GlitchTip не приложил: чтобы бот назвал их, "
            "задайте GLITCHTIP_API_TOKEN",
            "…и ещё {n} проблем, которые GlitchTip не приложил: чтобы бот назвал их, "
            "задайте GLITCHTIP_API_TOKEN",
        )
    ),
    more_issues_named=Plural(
        (
            "…и ещё {n} проблема, которую GlitchTip не приложил: бот назовёт её отдельным "
            "сообщением",
            "…и ещё {n} проблемы, которые GlitchTip не приложил: бот назовёт их отдельным "
            "сообщением",
            "…и ещё {n} проблем, которые GlitchTip не приложил: бот назовёт их отдельным "
            "сообщением",
        )
    ),
    issue_label="Проблема",
    unknown_payload="Вебхук в формате, которого бот не знает",
    monitor_down="НЕ РАБОТАЕТ",
    monitor_warning="ПРЕДУПРЕЖДЕНИЕ",
    monitor_up="РАБОТАЕТ",
    monitor_unknown="МОНИТОРИНГ",
    unnamed_monitor="(монитор без названия)",
    site_down="Сайт перестал отвечать.",
    site_up="Сайт снова отвечает.",
    more_monitors=Plural(
        (
            "…и ещё {n} монитор, здесь не показан",
            "…и ещё {n} монитора, здесь не показаны",
            "…и ещё {n} мониторов, здесь не показаны",
        )
    ),
    back_up_after="✅ {name}: снова работает, простой {duration}",
    frame_where="{at}, в функции {function}",
    level="Уровень: ",
    value="Значение: ",
    seen_times=Plural(("событий: {n}", "событий: {n}", "событий: {n}")),
    new_issue="🆕 Новая проблема, впервые замечена {age} назад",
    first_seen="впервые замечена {age} назад",
    alerts=Plural(("{n} алерт", "{n} алерта", "{n} алертов")),
    digest_head="🗂 {alerts}, получены с {start} по {end} (за {span})",
    digest_sent_after="; отправлены через {delay} после первого",
    cut_note="✂️ Сообщение сокращено: по номеру каждой проблемы открывается её страница в "
    "GlitchTip.",
    more_in_backlog=Plural(
        (
            "➕ Ещё {n} проблема из этих алертов здесь не показана: она есть в GlitchTip",
            "➕ Ещё {n} проблемы из этих алертов здесь не показаны: они есть в GlitchTip",
            "➕ Ещё {n} проблем из этих алертов здесь не показаны: они есть в GlitchTip",
        )
    ),
    late_note="⏳ С опозданием: GlitchTip отправил алерт в {time}, доставлен через {delay}.",
    repeat_note="↩️ Отправлено повторно: этот алерт мог уже прийти раньше.",
    repeat_note_digest="↩️ Отправлено повторно: часть этих алертов могла уже прийти раньше.",
    button_resolve="✅ Закрыть",
    button_ignore="🔕 Игнорировать…",
    button_ignore_forever="🔕 Навсегда",
    button_snooze_hour="🔕 1 ч",
    button_snooze_day="🔕 24 ч",
    button_snooze_events="🔕 До {count} новых событий",
    button_back="◀️ Назад",
    snoozed_until=" до {until}",
    snoozed_events=" до {count} новых событий",
    notice_cannot_snooze=(
        "{label}: бот не следит за этой проблемой и не сможет вернуть её: выберите «Навсегда»"
    ),
    summary_head="📋 Сводка за день, {start} – {end}",
    summary_new="🆕 Новые: {labels}",
    summary_escalating="📈 Резкий рост: {labels}",
    summary_regressed="🔁 Вернулись после закрытия: {labels}",
    summary_open="Ещё не закрыты, больше всего событий сверху ({count}):",
    summary_open_line="• {label} — {events} · {spark} · {title}",
    summary_taken=" · 👀 занимается {user}",
    summary_more="…и ещё {count}",
    summary_counts=(
        "Алерты: доставлено {delivered} (из них пачками в одном сообщении — {digested}), "
        "не отправлено, пока был выключен звук, — {silenced}"
    ),
    summary_quiet="С прошлой сводки ничего нового, и всё, о чём были алерты, закрыто.",
    command_issues="незакрытые проблемы этого чата, больше всего событий сверху",
    command_oncall="кто дежурит в каждой ротации",
    command_silences="что здесь без звука и до какого времени",
    command_status="что бот знает о Telegram, GlitchTip и своей очереди",
    issues_answer=(
        "📋 Незакрытые проблемы этого чата, больше всего событий сверху ({count}):\n{lines}\n{read}"
    ),
    issues_read="🕑 Как прочитано {ago} назад.",
    issues_read_asking="🕑 Как прочитано {ago} назад; спрашиваю снова.",
    issues_not_read="🕑 Ещё не прочитано у трекера; спрашиваю сейчас.",
    issues_none="📋 Здесь нет незакрытых проблем, о которых были алерты за последние 7 дней.",
    oncall_answer="👥 Дежурные:\n{lines}",
    oncall_line="{name}: {person} до {until}, затем {next}",
    oncall_none="👥 Ротаций нет: в файле маршрутов нет [[rotation]].",
    oncall_covering=" (вместо {person})",
    oncall_covers="Подмены впереди:\n{lines}",
    oncall_cover_line="{name}: {person} с {start} до {until}",
    command_cover="подменить дежурного: /cover РОТАЦИЯ [@кто] [с ВРЕМЯ] [до ВРЕМЯ]",
    cover_made="🔁 {person} дежурит в {rotation} с {start} до {until} вместо {instead}.",
    cover_usage=(
        "Напишите /cover РОТАЦИЯ, при желании @кто (иначе вы), с ВРЕМЯ, до ВРЕМЯ или на 2h:"
        " /cover payments до 18:00"
    ),
    cover_not_allowed="Менять дежурных могут только те, кому можно действовать с алертами.",
    cover_no_rotation="Ротации {rotation} нет: в файле маршрутов есть {known}.",
    cover_no_person="{person} — это не @username и не tg:<id пользователя>.",
    cover_unreadable_time=(
        "{time} — не время: напишите 18:00, 10.12 18:00, 2026-12-10 18:00 или на 2h."
    ),
    cover_past="Это время прошло: подмена должна кончаться позже, чем сейчас.",
    cover_backwards="Подмена кончается раньше, чем начинается.",
    cover_too_long="Подмена длится не больше {days} дней: дольше — правьте файл маршрутов.",
    cover_too_far=("Подмена кончается не позже {last}: дальше календарь бота не идёт."),
    cover_not_kept="Подмену сейчас не сохранить (хранилище бота): попробуйте через минуту.",
    command_start="получать вызовы сюда, лично, когда маршрут зовёт вас напрямую",
    start_answer=(
        "👋 Теперь, когда маршрут или шаг алерта зовёт вас напрямую, вызов придёт и сюда,"
        " с кнопками. Чтобы перестать, заблокируйте бота."
    ),
    start_unknown="Telegram не сказал, кто вы: ничего не сохранено.",
    start_not_kept="Сейчас не сохранить (хранилище бота): пришлите /start через минуту.",
    direct_call="📟 {said}",
    direct_open="Открыть в чате",
    direct_alert="Алерт зовёт вас:",
    with_hint="{call}\n{hint}",
    direct_hint="📟 {people}: напишите боту /start в личном чате, чтобы вызовы приходили и туда.",
    handoff="🔁 Смена дежурства, {rotation}: дежурит {person} до {until}, затем {next}.",
    silences_answer="🔇 Без звука в этом чате:\n{lines}",
    silences_line="{what} до {until} ({by})",
    silences_none="🔊 В этом чате всё со звуком.",
    status_answer="Telegram: {telegram}{services}\nОчередь: {queue}{more}",
    status_telegram_up="отвечает",
    status_telegram_down="не отвечает; бот спрашивает снова каждые несколько секунд",
    status_queue="ждут отправки: {pending}, не доставлено: {dead}",
    link_card="🔗 {label} · {status} · {events}",
    link_card_unresolved="не закрыта",
    link_card_resolved="закрыта",
    link_card_ignored="игнорируется",
    link_not_followed="🔒 Эта проблема не из тех, за которыми следит этот чат.",
    answer_busy="⏳ Не больше {count} ответов подряд: спросите снова через {seconds} с.",
    trend_24h="24 ч: {spark}",
    notice_choose="{label}: выберите под сообщением, на сколько её игнорировать",
    notice_snoozed_until="{label} игнорируется в GlitchTip до {until}",
    notice_snoozed_events="{label} игнорируется в GlitchTip до {count} новых событий",
    snooze_back_time="🔔 {label} снова открыта: игнорирование до {until} закончилось ({user})",
    snooze_back_events=(
        "🔔 {label} снова открыта: новых событий — {count} (игнорирование до {events} новых "
        "событий, {user})"
    ),
    button_reopen="↩️ Открыть снова",
    button_mute="🔇 Без звука 1 ч",
    button_unmute="🔊 Включить звук",
    resolved_by="✅ Закрыта ({user}, {time})",
    ignored_by="🔕 Игнорируется ({user}, {time})",
    reopened_by="↩️ Открыта снова ({user}, {time})",
    issue_resolved_by="✅ {label}: закрыта ({user}, {time})",
    issue_ignored_by="🔕 {label}: игнорируется ({user}, {time})",
    issue_reopened_by="↩️ {label}: открыта снова ({user}, {time})",
    resolved_in_glitchtip="✅ Закрыта в GlitchTip ({time})",
    ignored_in_glitchtip="🔕 Игнорируется — изменено в GlitchTip ({time})",
    reopened_in_glitchtip="↩️ Открыта снова в GlitchTip ({time})",
    issue_resolved_in_glitchtip="✅ {label}: закрыта в GlitchTip ({time})",
    issue_ignored_in_glitchtip="🔕 {label}: игнорируется — изменено в GlitchTip ({time})",
    issue_reopened_in_glitchtip="↩️ {label}: открыта снова в GlitchTip ({time})",
    notice_resolved="{label} закрыта в GlitchTip",
    notice_ignored="{label} теперь игнорируется в GlitchTip",
    notice_reopened="{label} снова открыта в GlitchTip",
    notice_asking="⏳ Запрос про {label} отправлен в GlitchTip: сообщение покажет, когда готово",
    press_failed_late="⚠️ Нажатие {user} на {label} ничего не изменило: {why}",
    not_updated=" (но сообщение обновить не удалось)",
    press_unknown=(
        "Бот не знает эту кнопку: сообщение старше, чем бот хранит кнопки, или его отправил "
        "другой бот."
    ),
    press_not_allowed=(
        "Управлять алертами здесь вам нельзя: вашего id в Telegram нет в списке бота."
    ),
    press_unavailable="Бот сейчас не может прочитать свои записи; ничего не изменено. "
    "Попробуйте ещё раз.",
    press_out_of_date=(
        "Кнопка устарела: проблему уже изменили после отправки сообщения. Ничего не сделано; "
        "в сообщении видно, что можно сделать сейчас."
    ),
    recall_taker=(
        "⏰ {label} всё ещё открыта, за {taker} уже {duration}: вы ещё на ней? Закройте её или"
        " отпустите, и вызовы продолжатся; через {duration} она станет ничьей."
    ),
    report_head="📊 Дежурство, {start} – {end}",
    report_alerts="Алерты: {alerts} сообщ. о {issues} проблемах",
    report_take="Время до «Беру»: медиана {median}, худшее {worst} (взято: {taken})",
    report_take_none="Время до «Беру»: ничего не взяли",
    report_resolve="Время до решения: медиана {median}, худшее {worst} (решено: {resolved})",
    report_resolve_none="Время до решения: в чате ничего не решили",
    report_calls="Вызовов: {calls}",
    report_takers="Кто что взял: {takers}",
    report_open="Ещё открыты ({count}):",
    report_open_none="Открытых не осталось.",
    report_open_line="• {label} · {title} · {who}",
    report_more="…и ещё {count}",
    span_seconds="{n} с",
    span_minutes="{n} мин",
    span_hours="{n} ч",
    recall_lapsed=(
        "⏰ От {taker} ни слова по {label} за {duration}: она снова ничья, вызовы продолжаются."
    ),
    escalation_call="⏰ За {minutes} мин алерт никто не взял: {people}",
    escalation_call_issues="⏰ За {minutes} мин никто не взял {labels}: {people}",
    escalating="📈 Резкий рост — событий за последний час: {count} · 24 ч: {spark}",
    named_hidden=(
        "🔎 Найдено в GlitchTip: алерт насчитал проблем: {total}, приложил: {attached}; "
        "вот остальные"
    ),
    notice_muted="{label}: без звука в этом чате до {until}; в GlitchTip ничего не изменено",
    notice_unmuted="{label}: звук в этом чате включён",
    notice_not_muted="{label}: звук здесь уже включён",
    silence_over=(
        "🔊 Звук снова включён ({what}, с {start} по {end}). Пока звук был выключен, "
        "не отправлено {alerts}"
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
        "Это сообщение о нескольких проблемах: ответьте ещё раз и начните с номера нужной "
        "({labels})."
    ),
    reply_not_kept=(
        "Бот больше не помнит, о чём было это сообщение; оставьте комментарий к проблеме прямо "
        "в GlitchTip."
    ),
    glitchtip_timeout="он не ответил вовремя",
    glitchtip_refused_connection="он не принимает соединения",
    glitchtip_unresolvable="его адрес не найден",
    glitchtip_connection_failed="соединение не удалось",
    glitchtip_unreachable=(
        "GlitchTip недоступен ({why}); ничего не изменено. Попробуйте позже, а если не "
        "получится, сообщите администратору бота."
    ),
    glitchtip_failing="GlitchTip сбоит ({detail}); ничего не изменено. Попробуйте позже.",
    glitchtip_operator="GlitchTip не принял изменение; подробности есть у администратора бота.",
    glitchtip_issue_gone=(
        "В GlitchTip такой проблемы больше нет (её удалили или она в недоступной боту "
        "организации); ничего не изменено."
    ),
    glitchtip_refused="GlitchTip отклонил изменение ({detail}).",
    mention_line="🔔 {people}",
    mention_user="пользователь {id}",
    mentions_lost="⚠️ Кого зовёт этот алерт, узнать не удалось: причина — в журнале бота.",
    test_message=(
        "✅ <b>Проверка связи от relay_app</b>\n"
        "Отправлено командой <code>relay-app check --send</code>: алерты GlitchTip для этого "
        "чата будут приходить сюда."
    ),
)
