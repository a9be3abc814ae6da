#!/usr/bin/env python3
"""Writes the reply-extraction corpus: one file per case.

Each case is a reply as a mail client writes it (text and HTML parts), with
the new content a reader should get. The markup follows what each client
produces (Gmail's gmail_quote/gmail_attr, Outlook's WordSection1 and its
border-top splitter, Outlook on the web's appendonsend/divRplyFwdMsg,
Apple Mail's and iOS Mail's blockquote type="cite", Thunderbird's
moz-cite-prefix and moz-signature, K-9's gmail_quote div, FairEmail's
plain blockquote), in six languages. Run it from this folder; the files it
writes are the corpus (core/reply_test.go reads them).

File format: "key: value" lines, then sections "--- text", "--- html"
(absent when the client sent no HTML part) and "--- want": the new content,
one line per line a reader sees (quotes kept for inline replies).
"""
import html, os

L = {
 'en': dict(anna='Anna Schmidt', aaddr='anna@example.com', bob='Bob Meyer',
   new=['Hi Anna,', 'Thanks, the numbers look right to me. Let\'s ship it on Thursday.', 'Best,', 'Bob'],
   quote=['Hi Bob,', 'Can you check the attached figures before Thursday?', 'Thanks,', 'Anna'],
   qs=['Can you join the call on Friday?', 'Which room should we book?', 'Do you need a projector?'],
   ans=['Yes, I can join from 10:00.', 'The small one on the 3rd floor is fine.'],
   subject='Quarterly report',
   gmail='On Mon, Feb 3, 2025 at 10:15\u202fAM Anna Schmidt <anna@example.com> wrote:',
   gmail_wrap=('On Mon, Feb 3, 2025 at 10:15\u202fAM Anna Schmidt <anna@example.com>', 'wrote:'),
   apple='On Feb 3, 2025, at 10:15, Anna Schmidt <anna@example.com> wrote:',
   tb='On 2/3/25 10:15, Anna Schmidt wrote:',
   k9='On February 3, 2025 10:15:00 AM GMT+01:00, Anna Schmidt <anna@example.com> wrote:',
   fe='On 3 Feb 2025 10:15, Anna Schmidt wrote:',
   hdr=('From', 'Sent', 'To', 'Subject'), date='Monday, February 3, 2025 10:15 AM',
   iphone='Sent from my iPhone', outlook_ios=('Get ', 'Outlook for iOS', ''),
   orig='-----Original Message-----', k9sig='Sent from my Android device with K-9 Mail. Please excuse my brevity.',
   fwd='---------- Forwarded message ---------'),
 'de': dict(anna='Anna Schmidt', aaddr='anna@example.de', bob='Bob Meyer',
   new=['Hallo Anna,', 'danke, die Zahlen passen. Wir liefern am Donnerstag aus.', 'Viele Grüße', 'Bob'],
   quote=['Hallo Bob,', 'kannst du die Zahlen im Anhang bis Donnerstag prüfen?', 'Danke', 'Anna'],
   qs=['Kannst du am Freitag beim Termin dabei sein?', 'Welchen Raum sollen wir buchen?', 'Brauchst du einen Beamer?'],
   ans=['Ja, ab 10:00 Uhr.', 'Der kleine Raum im 3. Stock reicht.'],
   subject='Quartalsbericht',
   gmail='Am Mo., 3. Feb. 2025 um 10:15 Uhr schrieb Anna Schmidt <anna@example.de>:',
   gmail_wrap=('Am Mo., 3. Feb. 2025 um 10:15 Uhr schrieb Anna Schmidt <', 'anna@example.de>:'),
   apple='Am 03.02.2025 um 10:15 schrieb Anna Schmidt <anna@example.de>:',
   tb='Am 03.02.25 um 10:15 schrieb Anna Schmidt:',
   k9='Am 3. Februar 2025 10:15:00 MEZ schrieb Anna Schmidt <anna@example.de>:',
   fe='Am 3. Feb. 2025 10:15 schrieb Anna Schmidt:',
   hdr=('Von', 'Gesendet', 'An', 'Betreff'), date='Montag, 3. Februar 2025 10:15',
   iphone='Von meinem iPhone gesendet', outlook_ios=('', 'Outlook für iOS', ' beziehen'),
   orig='-----Ursprüngliche Nachricht-----', k9sig='Diese Nachricht wurde von meinem Android-Gerät mit K-9 Mail gesendet.',
   fwd='---------- Weitergeleitete Nachricht ---------'),
 'fr': dict(anna='Anne Dupont', aaddr='anne@example.fr', bob='Bob Meyer',
   new=['Bonjour Anne,', 'Merci, les chiffres sont bons. On livre jeudi.', 'Bien à vous,', 'Bob'],
   quote=['Bonjour Bob,', 'Pouvez-vous vérifier les chiffres joints avant jeudi ?', 'Merci,', 'Anne'],
   qs=['Pouvez-vous participer à la réunion vendredi ?', 'Quelle salle réserver ?', 'Faut-il un projecteur ?'],
   ans=['Oui, à partir de 10 h.', 'La petite salle du 3e étage suffit.'],
   subject='Rapport trimestriel',
   gmail='Le lun. 3 févr. 2025 à 10:15, Anne Dupont <anne@example.fr> a écrit :',
   gmail_wrap=('Le lun. 3 févr. 2025 à 10:15, Anne Dupont <anne@example.fr> a', 'écrit :'),
   apple='Le 3 févr. 2025 à 10:15, Anne Dupont <anne@example.fr> a écrit :',
   tb='Le 03/02/2025 à 10:15, Anne Dupont a écrit\u00a0:',
   k9='Le 3 février 2025 10:15:00 GMT+01:00, Anne Dupont <anne@example.fr> a écrit :',
   fe='Le 3 févr. 2025 10:15, Anne Dupont a écrit :',
   hdr=('De\u00a0', 'Envoyé\u00a0', 'À\u00a0', 'Objet\u00a0'), date='lundi 3 février 2025 10:15',
   iphone='Envoyé de mon iPhone', outlook_ios=('Télécharger ', 'Outlook pour iOS', ''),
   orig='-----Message d\'origine-----', k9sig='Envoyé de mon appareil Android avec K-9 Mail. Veuillez excuser ma brièveté.',
   fwd='---------- Message transféré ---------'),
 'es': dict(anna='Ana García', aaddr='ana@example.es', bob='Bob Meyer',
   new=['Hola Ana:', 'Gracias, las cifras están bien. Lo enviamos el jueves.', 'Saludos,', 'Bob'],
   quote=['Hola Bob:', '¿Puedes revisar las cifras adjuntas antes del jueves?', 'Gracias,', 'Ana'],
   qs=['¿Puedes venir a la reunión del viernes?', '¿Qué sala reservamos?', '¿Necesitas un proyector?'],
   ans=['Sí, desde las 10:00.', 'La sala pequeña del 3.er piso sirve.'],
   subject='Informe trimestral',
   gmail='El lun, 3 feb 2025 a las 10:15, Ana García (<ana@example.es>) escribió:',
   gmail_wrap=('El lun, 3 feb 2025 a las 10:15, Ana García (<ana@example.es>)', 'escribió:'),
   apple='El 3 feb 2025, a las 10:15, Ana García <ana@example.es> escribió:',
   tb='El 3/2/25 a las 10:15, Ana García escribió:',
   k9='El 3 de febrero de 2025 10:15:00 CET, Ana García <ana@example.es> escribió:',
   fe='El 3 feb. 2025 10:15, Ana García escribió:',
   hdr=('De', 'Enviado el', 'Para', 'Asunto'), date='lunes, 3 de febrero de 2025 10:15',
   iphone='Enviado desde mi iPhone', outlook_ios=('Obtener ', 'Outlook para iOS', ''),
   orig='-----Mensaje original-----', k9sig='Enviado desde mi dispositivo Android con K-9 Mail. Por favor, disculpa mi brevedad.',
   fwd='---------- Mensaje reenviado ---------'),
 'pt': dict(anna='Ana Souza', aaddr='ana@example.com.br', bob='Bob Meyer',
   new=['Oi Ana,', 'Obrigado, os números estão certos. Vamos enviar na quinta.', 'Abraços,', 'Bob'],
   quote=['Oi Bob,', 'Você pode conferir os números anexos antes de quinta?', 'Obrigada,', 'Ana'],
   qs=['Você pode participar da reunião na sexta?', 'Qual sala reservamos?', 'Precisa de projetor?'],
   ans=['Sim, a partir das 10h.', 'A sala pequena do 3º andar serve.'],
   subject='Relatório trimestral',
   gmail='Em seg., 3 de fev. de 2025 às 10:15, Ana Souza <ana@example.com.br> escreveu:',
   gmail_wrap=('Em seg., 3 de fev. de 2025 às 10:15, Ana Souza <ana@example.com.br>', 'escreveu:'),
   apple='Em 3 de fev. de 2025, à(s) 10:15, Ana Souza <ana@example.com.br> escreveu:',
   tb='Em 03/02/2025 10:15, Ana Souza escreveu:',
   k9='Em 3 de fevereiro de 2025 10:15:00 BRT, Ana Souza <ana@example.com.br> escreveu:',
   fe='Em 3 de fev. de 2025 10:15, Ana Souza escreveu:',
   hdr=('De', 'Enviado', 'Para', 'Assunto'), date='segunda-feira, 3 de fevereiro de 2025 10:15',
   iphone='Enviado do meu iPhone', outlook_ios=('Obter o ', 'Outlook para iOS', ''),
   orig='-----Mensagem original-----', k9sig='Enviado do meu dispositivo Android com K-9 Mail. Desculpe a brevidade.',
   fwd='---------- Mensagem encaminhada ---------'),
 'ja': dict(anna='山田太郎', aaddr='taro@example.jp', bob='ボブ・マイヤー',
   new=['山田さん', 'ありがとうございます。数字は問題ありません。木曜日に出荷しましょう。', 'よろしくお願いします。', 'ボブ'],
   quote=['ボブさん', '添付の数字を木曜日までに確認していただけますか?', 'よろしくお願いします。', '山田'],
   qs=['金曜日の会議に参加できますか?', 'どの会議室を予約しますか?', 'プロジェクターは必要ですか?'],
   ans=['はい、10時から参加できます。', '3階の小会議室で大丈夫です。'],
   subject='四半期報告',
   gmail='2025年2月3日(月) 10:15 山田太郎 <taro@example.jp>:',
   gmail_wrap=('2025年2月3日(月) 10:15 山田太郎 <taro@example.jp>:',),
   apple='2025/02/03 10:15、山田太郎 <taro@example.jp>のメール:',
   tb='2025/02/03 10:15 に 山田太郎 さんは書きました:',
   k9='2025年2月3日 10:15:00 JST、山田太郎 <taro@example.jp> のメッセージ:',
   fe='2025/02/03 10:15 山田太郎 さんは書きました:',
   hdr=('差出人', '送信日時', '宛先', '件名'), date='2025年2月3日 10:15',
   iphone='iPhoneから送信', outlook_ios=('', 'Outlook for iOS', ' を入手'),
   orig='-----元のメッセージ-----', k9sig='K-9 Mail を使って Android 端末から送信しました。',
   fwd='---------- 転送メッセージ ---------'),
}
LANGS = ['en', 'de', 'fr', 'es', 'pt', 'ja']
SIG = ['Bob Meyer', 'Acme GmbH · +49 30 1234567']
e = html.escape

def q(lines, prefix='> '):
    return [(prefix + l).rstrip() if l else prefix.rstrip() for l in lines]

def header_block(d, bold_tag='b'):
    n = d['hdr']
    vals = [f"{d['anna']} <{d['aaddr']}>", d['date'], f"{d['bob']} <bob@example.org>", d['subject']]
    return [f'{k}: {v}' for k, v in zip(n, vals)]

def header_html(d):
    n = d['hdr']
    vals = [f"{d['anna']} <{d['aaddr']}>", d['date'], f"{d['bob']} <bob@example.org>", d['subject']]
    return '<br>\n'.join(f'<b>{e(k)}:</b> {e(v)}' for k, v in zip(n, vals))

cases = []
def add(name, client, lang, shape, text, html_, want, note=''):
    cases.append((name, client, lang, shape, text, html_, want, note))

def gmail(lang, sig=False, wrap=False, inline=False):
    d = L[lang]
    if inline:
        attr = d['gmail']
        t = [d['new'][0], '', attr, '', f'> {d["qs"][0]}', '', d['ans'][0], '', f'> {d["qs"][1]}', '',
             d['ans'][1], '', f'> {d["qs"][2]}', '>', '> ' + d['quote'][3], '>']
        bq = '<blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);padding-left:1ex">'
        h = (f'<div dir="ltr">{e(d["new"][0])}</div><br><div class="gmail_quote gmail_quote_container"><div dir="ltr" class="gmail_attr">{e(attr)}<br></div>'
             f'{bq}<div dir="ltr">{e(d["qs"][0])}</div></blockquote><div>{e(d["ans"][0])}</div><div><br></div>'
             f'{bq}<div dir="ltr">{e(d["qs"][1])}</div></blockquote><div>{e(d["ans"][1])}</div><div><br></div>'
             f'{bq}<div dir="ltr">{e(d["qs"][2])}<br></div><div>{e(d["quote"][3])}</div></blockquote></div>\n')
        want = [d['new'][0], attr, d['qs'][0], d['ans'][0], d['qs'][1], d['ans'][1]]
        add(f'gmail-{lang}-inline', 'gmail', lang, 'inline', '\n'.join(t), h, want)
        return
    attr_t = list(d['gmail_wrap']) if wrap else [d['gmail']]
    t = [d['new'][0], '', d['new'][1], '', d['new'][2], d['new'][3]]
    h = (f'<div dir="ltr"><div>{e(d["new"][0])}</div><div><br></div><div>{e(d["new"][1])}</div><div><br></div>'
         f'<div>{e(d["new"][2])}</div><div>{e(d["new"][3])}</div>')
    if sig:
        t += ['', '-- ', *SIG]
        h += ('<br clear="all"><div><br></div><span class="gmail_signature_prefix">-- </span><br>'
              f'<div dir="ltr" class="gmail_signature" data-smartmail="gmail_signature"><div dir="ltr">{e(SIG[0])}<div>{e(SIG[1])}</div></div></div>')
    h += '</div><br>'
    t += ['', *attr_t, '', *q(d['quote'][:2]), '>', *q(d['quote'][2:]), '']
    h += (f'<div class="gmail_quote gmail_quote_container"><div dir="ltr" class="gmail_attr">{e(d["gmail"])}<br></div>'
          '<blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);padding-left:1ex">'
          f'<div dir="ltr">{e(d["quote"][0])}<div>{e(d["quote"][1])}</div><div><br></div><div>{e(d["quote"][2])}</div><div>{e(d["quote"][3])}</div></div>'
          '</blockquote></div>\n')
    add(f'gmail-{lang}-top' + ('-sig' if sig else '') + ('-wrapped' if wrap else ''), 'gmail', lang, 'top', '\n'.join(t), h, d['new'])

def outlook_desktop(lang, text_only=False, orig=False):
    d = L[lang]
    if orig:
        t = [*d['new'], '', d['orig'], *header_block(d), '', *d['quote']]
        add(f'outlook-desktop-{lang}-original-message', 'outlook-desktop', lang, 'top', '\r\n'.join(t), None, d['new'])
        return
    t = [d['new'][0], '', d['new'][1], '', d['new'][2], d['new'][3], '', *header_block(d), '', *d['quote']]
    p = lambda s: f'<p class="MsoNormal">{e(s)}<o:p></o:p></p>\n'
    blank = '<p class="MsoNormal"><o:p>&nbsp;</o:p></p>\n'
    h = ('<html xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" xmlns:w="urn:schemas-microsoft-com:office:word" '
         'xmlns:m="http://schemas.microsoft.com/office/2004/12/omml" xmlns="http://www.w3.org/TR/REC-html40"><head>'
         '<meta http-equiv="Content-Type" content="text/html; charset=utf-8"><meta name="Generator" content="Microsoft Word 15 (filtered medium)">'
         '<style><!--\n/* Font Definitions */\n@font-face\n\t{font-family:"Cambria Math";}\np.MsoNormal, li.MsoNormal, div.MsoNormal\n\t{margin:0in;font-size:11.0pt;font-family:"Calibri",sans-serif;}\n--></style>'
         '<!--[if gte mso 9]><xml>\n<o:shapedefaults v:ext="edit" spidmax="1026" />\n</xml><![endif]--></head>'
         '<body lang="EN-US" link="#0563C1" vlink="#954F72" style="word-wrap:break-word"><div class="WordSection1">\n'
         + p(d['new'][0]) + blank + p(d['new'][1]) + blank + p(d['new'][2]) + p(d['new'][3]) + blank +
         '<div><div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0in 0in 0in">\n'
         f'<p class="MsoNormal">{header_html(d)}<o:p></o:p></p>\n</div></div>\n' + blank +
         ''.join(p(x) for x in d['quote']) + '</div>\n</body>\n</html>\n')
    if text_only:
        add(f'outlook-desktop-{lang}-text', 'outlook-desktop', lang, 'top', '\r\n'.join(t), None, d['new'])
    else:
        add(f'outlook-desktop-{lang}-top', 'outlook-desktop', lang, 'top', '\r\n'.join(t), h, d['new'])

OWA_STYLE = 'font-family: Aptos, Aptos_EmbeddedFont, Aptos_MSFontService, Calibri, Helvetica, sans-serif; font-size: 12pt; color: rgb(0, 0, 0);'
def outlook_web(lang, ios=False):
    d = L[lang]
    t = [*d['new']]
    h = ('<html><head>\n<meta http-equiv="Content-Type" content="text/html; charset=utf-8">\n'
         '<style type="text/css" style="display:none;"> P {margin-top:0;margin-bottom:0;} </style>\n</head>\n<body dir="ltr">\n'
         + ''.join(f'<div class="elementToProof" style="{OWA_STYLE}">{e(x)}</div>\n' for x in d['new']))
    if ios:
        pre, link, post = d['outlook_ios']
        t += ['', f'{pre}{link}<https://aka.ms/o0ukef>{post}']
        h += ('<div id="ms-outlook-mobile-body-separator-line" dir="auto"><br></div>'
              f'<div id="ms-outlook-mobile-signature" dir="auto">{e(pre)}<a href="https://aka.ms/o0ukef">{e(link)}</a>{e(post)}</div>\n')
    t += ['________________________________', *header_block(d), '', *d['quote']]
    h += ('<div id="appendonsend"></div>\n<hr style="display:inline-block;width:98%" tabindex="-1">\n'
          '<div id="divRplyFwdMsg" dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt" color="#000000">'
          + header_html(d) + '</font>\n<div>&nbsp;</div>\n</div>\n<div class="BodyFragment"><font size="2"><span style="font-size:11pt;">\n<div class="PlainText">'
          + '<br>\n'.join(e(x) for x in d['quote']) + '</div>\n</span></font></div>\n</body>\n</html>\n')
    client = 'outlook-ios' if ios else 'outlook-web'
    add(f'{client}-{lang}-top', client, lang, 'top', '\r\n'.join(t), h, d['new'])

def apple(lang, ios=False, sig=False):
    d = L[lang]
    a = d['apple']
    t = list(d['new'])
    if ios:
        t += ['', d['iphone']]
        h = ('<html><head><meta http-equiv="content-type" content="text/html; charset=utf-8"></head><body dir="auto">'
             + ''.join(f'<div dir="ltr">{e(x)}</div>' for x in d['new'])
             + f'<div dir="ltr"><br></div><div dir="ltr">{e(d["iphone"])}</div>'
             f'<div dir="ltr"><br><blockquote type="cite">{e(a)}<br><br></blockquote></div>'
             '<blockquote type="cite"><div dir="ltr">' + ''.join(f'<div dir="ltr">{e(x)}</div>' for x in d['quote'])
             + '</div></blockquote></body></html>')
    else:
        body = e(d['new'][0]) + ''.join(f'<div>{e(x)}</div>' for x in d['new'][1:])
        if sig:
            t += ['', '-- ', *SIG]
            body += f'<div><br></div><div>--&nbsp;</div><div>{e(SIG[0])}</div><div>{e(SIG[1])}</div>'
        h = ('<html aria-label="message body"><head><meta http-equiv="content-type" content="text/html; charset=utf-8"></head>'
             '<body style="overflow-wrap: break-word; -webkit-nbsp-mode: space; line-break: after-white-space;">'
             + body + f'<div><br><blockquote type="cite"><div>{e(a)}</div><br class="Apple-interchange-newline"><div><div>'
             + ''.join(f'<div>{e(x)}</div>' for x in d['quote']) + '</div></div></blockquote></div><br></body></html>')
    t += ['', '> ' + a, '> ', *q(d['quote']), '']
    client = 'ios-mail' if ios else 'apple-mail'
    add(f'{client}-{lang}-top' + ('-sig' if sig else ''), client, lang, 'top', '\n'.join(t), h, d['new'])

TB_HEAD = ('<!DOCTYPE html>\n<html>\n  <head>\n    <meta http-equiv="Content-Type" content="text/html; charset=UTF-8">\n'
           '  </head>\n  <body>\n')
def tb_quote(d, lines):
    return ('    <div class="moz-cite-prefix">' + e(d['tb']) + '<br>\n    </div>\n'
            '    <blockquote type="cite" cite="mid:4f1c2b7e-91aa-4c1d-a5b0-2f3c9d1e8a77@example.com">\n'
            + ''.join(f'      <p>{e(x)}</p>\n' for x in lines) + '    </blockquote>\n')
def thunderbird(lang, shape, text_only=False):
    d = L[lang]
    sig_t = ['-- ', *SIG]
    sig_h = f'    <pre class="moz-signature" cols="72">-- \n{e(SIG[0])}\n{e(SIG[1])}</pre>\n'
    if shape == 'top':
        t = [*d['new'], '', *sig_t, '', d['tb'], *q(d['quote'])]
        h = TB_HEAD + ''.join(f'    <p>{e(x)}</p>\n' for x in d['new']) + sig_h + tb_quote(d, d['quote']) + '  </body>\n</html>\n'
        want = d['new']
    elif shape == 'bottom':
        t = [d['tb'], *q(d['quote']), '', *d['new'], '', *sig_t]
        h = TB_HEAD + tb_quote(d, d['quote']) + ''.join(f'    <p>{e(x)}</p>\n' for x in d['new']) + sig_h + '  </body>\n</html>\n'
        want = d['new']
    else:  # inline
        t = [d['tb'], f'> {d["qs"][0]}', '', d['ans'][0], '', f'> {d["qs"][1]}', '', d['ans'][1], '', f'> {d["qs"][2]}', '>', '> ' + d['quote'][3], '', *sig_t]
        h = (TB_HEAD + '    <div class="moz-cite-prefix">' + e(d['tb']) + '<br>\n    </div>\n'
             f'    <blockquote type="cite">\n      <p>{e(d["qs"][0])}</p>\n    </blockquote>\n    <p>{e(d["ans"][0])}</p>\n'
             f'    <blockquote type="cite">\n      <p>{e(d["qs"][1])}</p>\n    </blockquote>\n    <p>{e(d["ans"][1])}</p>\n'
             f'    <blockquote type="cite">\n      <p>{e(d["qs"][2])}</p>\n      <p>{e(d["quote"][3])}</p>\n    </blockquote>\n'
             + sig_h + '  </body>\n</html>\n')
        want = [d['tb'], d['qs'][0], d['ans'][0], d['qs'][1], d['ans'][1]]
    add(f'thunderbird-{lang}-{shape}' + ('-text' if text_only else ''), 'thunderbird', lang, shape, '\n'.join(t) + '\n', None if text_only else h, want)

K9_BQ = '<blockquote class="gmail_quote" style="margin: 0pt 0pt 0pt 0.8ex; border-left: 1px solid rgb(204, 204, 204); padding-left: 1ex;">'
def k9(lang, shape, text_only=False):
    d = L[lang]
    if shape == 'top':
        t = [d['new'][0], '', d['new'][1], '', d['new'][2], d['new'][3], '-- ', d['k9sig'], '', d['k9'], *q(d['quote'], '>')]
        h = ('<!DOCTYPE html><html><body>' + e(d['new'][0]) + '<br><br>' + e(d['new'][1]) + '<br><br>' + e(d['new'][2]) + '<br>'
             + e(d['new'][3]) + '<br>-- <br>' + e(d['k9sig']) + f'<br><br><div class="gmail_quote">{e(d["k9"])}' + K9_BQ
             + '<br>'.join(e(x) for x in d['quote']) + '</blockquote></div></body></html>')
        want = d['new']
    elif shape == 'bottom':
        t = [d['k9'], *q(d['quote'], '>'), '', *d['new'], '-- ', d['k9sig']]
        h = (f'<!DOCTYPE html><html><body><div class="gmail_quote">{e(d["k9"])}' + K9_BQ + '<br>'.join(e(x) for x in d['quote'])
             + '</blockquote></div><br>' + '<br>'.join(e(x) for x in d['new']) + '<br>-- <br>' + e(d['k9sig']) + '</body></html>')
        want = d['new']
    else:
        t = [d['new'][0], '', d['k9'], f'>{d["qs"][0]}', '', d['ans'][0], '', f'>{d["qs"][1]}', '', d['ans'][1], '', f'>{d["qs"][2]}', '-- ', d['k9sig']]
        h = ('<!DOCTYPE html><html><body>' + e(d['new'][0]) + f'<br><br><div class="gmail_quote">{e(d["k9"])}'
             + K9_BQ + e(d['qs'][0]) + '</blockquote><br>' + e(d['ans'][0]) + '<br><br>'
             + K9_BQ + e(d['qs'][1]) + '</blockquote><br>' + e(d['ans'][1]) + '<br><br>'
             + K9_BQ + e(d['qs'][2]) + '</blockquote></div>-- <br>' + e(d['k9sig']) + '</body></html>')
        want = [d['new'][0], d['k9'], d['qs'][0], d['ans'][0], d['qs'][1], d['ans'][1]]
    add(f'k9-{lang}-{shape}' + ('-text' if text_only else ''), 'k9', lang, shape, '\n'.join(t), None if text_only else h, want)

FE_BQ = '<blockquote style="margin:0 0 0 3px;border-left:3px solid #ccc;padding-left:3px;">'
def fairemail(lang, shape):
    d = L[lang]
    if shape == 'top':
        t = [*d['new'], '', d['fe'], *q(d['quote'])]
        h = ('<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width, initial-scale=1.0"></head><body>'
             + ''.join(f'<p dir="ltr">{e(x)}</p>' for x in d['new']) + f'<p><br></p><div><p dir="ltr">{e(d["fe"])}</p>'
             + FE_BQ + ''.join(f'<p dir="ltr">{e(x)}</p>' for x in d['quote']) + '</blockquote></div></body></html>')
        want = d['new']
    else:
        t = [d['fe'], f'> {d["qs"][0]}', '', d['ans'][0], '', f'> {d["qs"][1]}', '', d['ans'][1], '', f'> {d["qs"][2]}']
        h = ('<!DOCTYPE html><html><head></head><body>' + f'<div><p dir="ltr">{e(d["fe"])}</p>'
             + FE_BQ + f'<p dir="ltr">{e(d["qs"][0])}</p></blockquote><p dir="ltr">{e(d["ans"][0])}</p>'
             + FE_BQ + f'<p dir="ltr">{e(d["qs"][1])}</p></blockquote><p dir="ltr">{e(d["ans"][1])}</p>'
             + FE_BQ + f'<p dir="ltr">{e(d["qs"][2])}</p></blockquote></div></body></html>')
        want = [d['fe'], d['qs'][0], d['ans'][0], d['qs'][1], d['ans'][1]]
    add(f'fairemail-{lang}-{shape}', 'fairemail', lang, shape, '\n'.join(t), h, want)

for lang in LANGS:
    d = L[lang]
    gmail(lang); gmail(lang, sig=True, wrap=True); gmail(lang, inline=True)
    outlook_desktop(lang); outlook_desktop(lang, text_only=True); outlook_desktop(lang, orig=True)
    outlook_web(lang); outlook_web(lang, ios=True)
    apple(lang); apple(lang, sig=True); apple(lang, ios=True)
    for shape in ('top', 'bottom', 'inline'):
        thunderbird(lang, shape)
        k9(lang, shape)
    thunderbird(lang, 'inline', text_only=True)
    k9(lang, 'top', text_only=True)
    fairemail(lang, 'top'); fairemail(lang, 'inline')
    # A first message: nothing quoted, returned whole.
    add(f'gmail-{lang}-new', 'gmail', lang, 'none', '\n'.join(d['new']) + '\n',
        '<div dir="ltr">' + ''.join(f'<div>{e(x)}</div>' for x in d['new']) + '</div>\n', d['new'])
    # A forward with a comment: the forwarded text is the content.
    fw = [d['new'][0], '', d['fwd'], f"From: {d['anna']} <{d['aaddr']}>", 'Date: Mon, Feb 3, 2025 at 10:15', f'Subject: {d["subject"]}',
          f"To: {d['bob']} <bob@example.org>", '', *d['quote']]
    add(f'gmail-{lang}-forward', 'gmail', lang, 'forward', '\n'.join(fw), None, fw)

for name, client, lang, shape, text, h, want, note in cases:
    with open(name + '.txt', 'w', encoding='utf-8', newline='') as f:
        f.write(f'client: {client}\nlang: {lang}\nshape: {shape}\n--- text\n{text}\n')
        if h is not None:
            f.write(f'--- html\n{h}\n')
        f.write('--- want\n' + '\n'.join(want) + '\n')
print(len(cases), 'cases')
