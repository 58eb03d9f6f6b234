-- 0007: the words internal/lexnorm makes one term (a number word and its
-- digits, a group of synonyms), by the lexemes to_tsvector('english') makes
-- of them: SearchText matches a query word to the other lexemes of its
-- group too, as the SQLite text index and the lexical embedder do. The
-- chunks' tsvectors are unchanged. store/postgres's tests check these
-- groups against lexnorm.Groups.
CREATE TABLE lexeme_alternatives (
	lexeme      text NOT NULL,
	alternative text NOT NULL,
	PRIMARY KEY (lexeme, alternative)
);

WITH words (grp, word) AS (VALUES
	(1, 'zero'), (1, '0'),
	(2, 'one'), (2, '1'),
	(3, 'two'), (3, '2'),
	(4, 'three'), (4, '3'),
	(5, 'four'), (5, '4'),
	(6, 'five'), (6, '5'),
	(7, 'six'), (7, '6'),
	(8, 'seven'), (8, '7'),
	(9, 'eight'), (9, '8'),
	(10, 'nine'), (10, '9'),
	(11, 'ten'), (11, '10'),
	(12, 'eleven'), (12, '11'),
	(13, 'twelve'), (13, '12'),
	(14, 'thirteen'), (14, '13'),
	(15, 'fourteen'), (15, '14'),
	(16, 'fifteen'), (16, '15'),
	(17, 'sixteen'), (17, '16'),
	(18, 'seventeen'), (18, '17'),
	(19, 'eighteen'), (19, '18'),
	(20, 'nineteen'), (20, '19'),
	(21, 'twenty'), (21, '20'),
	(22, 'thirty'), (22, '30'),
	(23, 'forty'), (23, '40'),
	(24, 'fifty'), (24, '50'),
	(25, 'sixty'), (25, '60'),
	(26, 'seventy'), (26, '70'),
	(27, 'eighty'), (27, '80'),
	(28, 'ninety'), (28, '90'),
	(29, 'first'), (29, '1st'),
	(30, 'third'), (30, '3rd'),
	(31, 'fourth'), (31, '4th'),
	(32, 'fifth'), (32, '5th'),
	(33, 'sixth'), (33, '6th'),
	(34, 'seventh'), (34, '7th'),
	(35, 'eighth'), (35, '8th'),
	(36, 'ninth'), (36, '9th'),
	(37, 'tenth'), (37, '10th'),
	(38, 'purchase'), (38, 'buy'),
	(39, 'mail'), (39, 'email'),
	(40, 'login'), (40, 'logon'), (40, 'signin'),
	(41, 'delete'), (41, 'erase'), (41, 'erasure'),
	(42, 'holiday'), (42, 'vacation'),
	(43, 'permit'), (43, 'allow'),
	(44, 'telephone'), (44, 'phone'),
	(45, 'automobile'), (45, 'car'),
	(46, 'large'), (46, 'big'),
	(47, 'quick'), (47, 'fast'),
	(48, 'reply'), (48, 'answer'), (48, 'respond'),
	(49, 'display'), (49, 'show'),
	(50, 'outage'), (50, 'downtime'),
	(51, 'document'), (51, 'doc'),
	(52, 'mfa'), (52, '2fa'),
	(53, 'inquiry'), (53, 'enquiry'), (53, 'inquire'), (53, 'enquire')
),
lexemes AS (
	SELECT grp, unnest(tsvector_to_array(to_tsvector('english', word))) AS lexeme FROM words
)
INSERT INTO lexeme_alternatives (lexeme, alternative)
SELECT DISTINCT a.lexeme, b.lexeme
FROM lexemes a JOIN lexemes b ON a.grp = b.grp AND a.lexeme <> b.lexeme;
